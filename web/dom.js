// The page's DOM helpers: an element by id, and an element built with its attributes, handlers and children.
const $ = (id) => document.getElementById(id);

function el(tag, attrs, children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'text') node.textContent = v;
    else if (k === 'html') node.innerHTML = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children || []) if (c) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  return node;
}

export { $, el };
