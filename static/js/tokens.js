/* The tokens page (templates/pipelines/tokens.html): the Copy button of a token just made. The
 * clipboard API needs a secure context (HTTPS or localhost): elsewhere the token is selected,
 * for the user to copy by hand. */
const value = document.getElementById('new-token-value');
const copy = document.getElementById('copy-token');
const result = document.getElementById('copy-result');

function selectToken() {
  const range = document.createRange();
  range.selectNodeContents(value);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

if (copy && value) {
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value.textContent.trim());
      result.className = '';
      result.textContent = 'Token copied to the clipboard.';
    } catch (e) {
      selectToken();
      result.className = 'error';
      result.textContent = 'The token could not be copied here: it is selected, copy it by hand (Ctrl+C).';
    }
  });
}
