/* Text fitted to a width without measuring it (pure): measuring SVG text (X6's textWrap, getBBox)
 * costs more than the rest of a node's drawing, so widths are added up from the characters'.
 * The node texts are X6's "Arial, helvetica, sans-serif": Arial's advance widths (Helvetica's and
 * Liberation Sans's are the same), in thousandths of an em; other characters count as an "m". */

const WIDTHS = new Map();
const set = (chars, w) => { for (const c of chars) WIDTHS.set(c, w); };
set("ijl", 222);
set(" !,./:;I[\\]ft", 278);
set('-()`r·', 333);
set('"*', 355);
set("'|", 191);
set('Jckstvxyz^_{}', 500);
set('#$0123456789?Labdeghnopqu', 556);
set('+<=>~', 584);
set('FTZ', 611);
set('&ABEKPSVXY', 667);
set('CDHNRUw', 722);
set('GOQ', 778);
set('%Mm', 833);
set('W', 944);
set('@…⚠', 1000);

/** The width in px of `text` at `size` px. */
export function textWidth(text, size) {
  let em = 0;
  for (const c of String(text)) em += WIDTHS.get(c) || 833;
  return (em * size) / 1000;
}

/** `text` whole if it fits in `width` px at `size` px, else cut, ending with "…". */
export function fitText(text, width, size) {
  if (textWidth(text, size) <= width) return text;
  const chars = [...String(text)];
  const room = (width * 1000) / size;
  let em = WIDTHS.get('…');
  let n = 0;
  while (n < chars.length && em + (WIDTHS.get(chars[n]) || 833) <= room) em += WIDTHS.get(chars[n++]) || 833;
  return `${chars.slice(0, n).join('').trimEnd()}…`;
}

/** `text` in at most `maxLines` lines of `width` px, broken at spaces (the last line cut with
 * "…" if the rest does not fit): a list of lines. */
export function wrapText(text, width, size, maxLines = 2) {
  const words = String(text).split(/\s+/).filter(Boolean);
  const lines = [];
  while (words.length && lines.length < maxLines - 1) {
    let line = /** @type {string} */ (words.shift()); // words is not empty
    while (words.length && textWidth(`${line} ${words[0]}`, size) <= width) line += ` ${words.shift()}`;
    if (textWidth(line, size) > width) { words.unshift(line); break; } // one long word: cut below
    lines.push(line);
  }
  if (words.length) lines.push(fitText(words.join(' '), width, size));
  return lines;
}
