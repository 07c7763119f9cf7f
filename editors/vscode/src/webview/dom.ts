/** A tiny element builder: h("div", {className: "x"}, "text", child). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<Record<string, string | boolean | ((event: Event) => void)>> = {},
  ...children: Array<Node | string | null | undefined>
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (typeof value === "function") {
      element.addEventListener(key.replace(/^on/, "").toLowerCase(), value);
    } else if (key === "className" && typeof value === "string") {
      element.className = value;
    } else if (typeof value === "boolean") {
      if (value) element.setAttribute(key, "");
    } else if (value !== undefined) {
      element.setAttribute(key, value);
    }
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      element.append(child);
    }
  }
  return element;
}

export function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) {
    throw new Error(`missing #${id}`);
  }
  return element as T;
}
