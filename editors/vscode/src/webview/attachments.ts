import type { Attachment, FromView } from "../protocol";
import { h } from "./dom";

type Post = (message: FromView) => void;

const THUMBNAIL = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/;

/** The context chips above the input: the current file, dropped files, pasted images. */
export function showAttachments(box: HTMLElement, list: Attachment[], post: Post): void {
  box.replaceChildren(
    ...list.map((attachment) => {
      const thumbnail = attachment.thumbnail && THUMBNAIL.test(attachment.thumbnail) ? h("img", { className: "thumbnail", src: attachment.thumbnail, alt: "" }) : null;
      const title = attachment.current ? `${attachment.uri} (the active editor's ${attachment.kind === "selection" ? "selection" : "file"}: sent with each prompt until removed)` : attachment.uri;
      return h(
        "span",
        { className: `chip ${attachment.kind}${attachment.current ? " current" : ""}`, title, "data-id": attachment.id },
        thumbnail,
        `${attachment.label} `,
        h("button", { "aria-label": `Remove ${attachment.label}`, onclick: () => post({ type: "removeAttachment", id: attachment.id }) }, "×"),
      );
    }),
  );
}

/** The URIs of files dragged from VS Code's explorer or an editor tab (or another app). */
export function droppedUris(data: DataTransfer): string[] {
  const code = data.getData("application/vnd.code.uri-list") || data.getData("text/uri-list");
  const lines = code.split(/\r?\n/).map((line) => line.trim()).filter((line) => line && !line.startsWith("#"));
  if (lines.length > 0) return lines;
  try {
    const resources: unknown = JSON.parse(data.getData("ResourceURLs") || "[]");
    return Array.isArray(resources) ? resources.filter((item): item is string => typeof item === "string") : [];
  } catch {
    return [];
  }
}

function readAsBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error ?? new Error("could not read the image"));
    reader.readAsDataURL(file);
  });
}

/** Drop files on the view and paste images into the input: each becomes a chip (the extension checks them). */
export function acceptAttachments(input: HTMLTextAreaElement, post: Post): void {
  input.addEventListener("paste", (event) => {
    const images = Array.from(event.clipboardData?.items ?? []).filter((item) => item.kind === "file" && item.type.startsWith("image/"));
    if (images.length === 0) return; // text pastes as usual
    event.preventDefault();
    images.forEach((item, index) => {
      const file = item.getAsFile();
      if (!file) return;
      void readAsBase64(file).then((data) => post({ type: "pasteImage", mimeType: file.type || item.type, data, name: file.name && file.name !== "image.png" ? file.name : `pasted-image-${index + 1}` }));
    });
  });
  const body = document.body;
  body.addEventListener("dragover", (event) => {
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = "copy";
    body.classList.add("dragging");
  });
  body.addEventListener("dragleave", (event) => {
    if (event.relatedTarget === null) body.classList.remove("dragging");
  });
  body.addEventListener("drop", (event) => {
    event.preventDefault();
    body.classList.remove("dragging");
    if (!event.dataTransfer) return;
    const uris = droppedUris(event.dataTransfer);
    if (uris.length > 0) post({ type: "dropFiles", uris });
    const images = Array.from(event.dataTransfer.files).filter((file) => file.type.startsWith("image/"));
    for (const file of images) void readAsBase64(file).then((data) => post({ type: "pasteImage", mimeType: file.type, data, name: file.name }));
    input.focus();
  });
}
