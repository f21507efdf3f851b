/* Chart.js in the colours of the page's theme (light or dark, as the system says): the text and
 * grid lines of every chart, from the CSS variables --chart-text and --chart-grid (shell.css).
 * Chart.js draws in a canvas, out of CSS's reach, and a chart keeps the default colours of the
 * moment it was made (copied into its options), so each chart is given them as its own options:
 * those made before (then drawn again) and those made after (a plugin, before their first drawing). */

/**
 * Write the colours into a chart's options (pure: Chart.js's `chart.config.options`): scales'
 * ticks, titles, grid and border, the legend's labels. A colour the page set itself stays, unless
 * it is the one this gave before (`previous`, when the theme changes).
 */
export function paintOptions(options, { text, grid }, previous = {}) {
  const ours = (value, was) => value === undefined || value === was;
  const set = (obj, key, value, was) => {
    if (ours(obj[key], was)) obj[key] = value;
  };
  for (const scale of Object.values(options.scales || {})) {
    for (const part of ['ticks', 'title']) set(scale[part] || (scale[part] = {}), 'color', text, previous.text);
    for (const part of ['grid', 'border']) set(scale[part] || (scale[part] = {}), 'color', grid, previous.grid);
  }
  const plugins = options.plugins || (options.plugins = {});
  const legend = plugins.legend || (plugins.legend = {});
  set(legend.labels || (legend.labels = {}), 'color', text, previous.text);
  return options;
}

/** The theme's chart colours from the page's CSS variables, or null before shell.css is in. */
export function cssColours(root = document.documentElement) {
  const css = getComputedStyle(root);
  const text = css.getPropertyValue('--chart-text').trim();
  const grid = css.getPropertyValue('--chart-grid').trim();
  return text && grid ? { text, grid } : null;
}

/** Colour every chart of the page, now and when the system's colour scheme changes. */
export function themeCharts(Chart) {
  const found = cssColours();
  if (!Chart || !found) return;
  let colours = found;
  // a chart copies Chart.defaults' colours into its options when it is made: those it holds are
  // Chart.js's own (as they were before this), or this theme's
  const before = { text: Chart.defaults.color, grid: Chart.defaults.borderColor };
  Chart.defaults.color = colours.text;
  Chart.defaults.borderColor = colours.grid;
  Chart.register({ id: 'page-theme', beforeInit: (chart) => { paintOptions(chart.config.options, colours, before); } });
  const paintAll = (previous) => {
    for (const chart of Object.values(Chart.instances || {})) {
      paintOptions(chart.config.options, colours, previous);
      chart.update('none');
    }
  };
  paintAll(before);
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
    const previous = colours;
    colours = cssColours() || colours;
    Chart.defaults.color = colours.text;
    Chart.defaults.borderColor = colours.grid;
    paintAll(previous);
  });
}
