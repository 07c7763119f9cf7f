/** Driving VS Code's workbench in chromium: the command palette, the chat webview, editors. */
import { chromium, type Browser, type FrameLocator, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const WAIT = Number(process.env.HERMES_E2E_WAIT_MS ?? 90_000); // a loaded 2-core CI machine; each wait ends on its event

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--headless", "--disable-gpu"] });
}

export async function openWorkbench(browser: Browser, url: string, folder: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
  page.setDefaultTimeout(WAIT);
  await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
  await page.locator(".monaco-workbench").waitFor();
  await page.locator(".statusbar-item", { hasText: "Hermes" }).first().waitFor();
  return page;
}

export async function runCommand(page: Page, title: string): Promise<void> {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
  await page.keyboard.press("Enter");
}

/** The chat view's document: VS Code nests a webview in two iframes. */
export function chatFrame(page: Page): FrameLocator {
  return page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
}

export async function openFile(page: Page, name: string): Promise<void> {
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: name }).waitFor();
}

/** The text of the active editor's visible lines. */
export async function editorText(page: Page): Promise<string> {
  const lines = await page.locator(".editor-group-container.active .monaco-editor .view-lines .view-line").allInnerTexts();
  return lines.map((line) => line.replace(/\u00a0/g, " ")).join("\n");
}

/** The chat view's Frame (for evaluate); the FrameLocator above is for clicks and waits. */
export async function chatFrameHandle(page: Page): Promise<import("playwright-core").Frame> {
  for (const frame of page.frames()) {
    if (await frame.$("#composer #input").catch(() => null)) return frame;
  }
  throw new Error("the chat webview's frame is not there");
}

/** Drags the sidebar's edge so the chat view is as wide as a user would make it. */
export async function widenSidebar(page: Page, width: number): Promise<void> {
  const box = await page.locator(".part.sidebar").boundingBox();
  if (!box) return;
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width, y);
  await page.mouse.down();
  await page.mouse.move(box.x + width, y, { steps: 5 });
  await page.mouse.up();
}
