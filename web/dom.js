// The page's DOM helpers: an element by id, and an element built with its attributes, handlers and children.
// Every text an element is built with is shown, never obeyed: its control and bidirectional characters are made
// visible (visible.js), so a step title holding U+202E cannot reverse what the person reads.
import { visibleText } from './visible.js';

const $ = (id) => document.getElementById(id);

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') node.textContent = visibleText(v);
    else if (k === 'html') node.innerHTML = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children || [])
    if (c) node.appendChild(typeof c === 'string' ? document.createTextNode(visibleText(c)) : c);
  return node;
}

export { $, el };
