"""Small helpers for driving the designer page."""
from designer.pipelines.models import Pipeline


def open_designer(page, owner, draft=None, name="p"):
    from designer.pipelines.runs.api import EMPTY_PIPELINE

    p = Pipeline.objects.create(owner=owner, name=name, draft=draft or dict(EMPTY_PIPELINE))
    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    return p


def node(page, nid):
    return page.locator(f'#canvas g[data-cell-id="{nid}"]')


def port(page, nid, port_id):
    return page.locator(f'#canvas g[data-cell-id="{nid}"] [port="{port_id}"]')


def centre(locator, attempts=5):
    """The centre of an element on screen. A node's ports are drawn again when the answer of an
    autosave changes their problem marks, so the element found may be replaced while measured: look again."""
    from playwright.sync_api import Error

    for attempt in range(attempts):
        try:
            locator.scroll_into_view_if_needed()
            box = locator.bounding_box()
        except Error as e:
            if "not attached" not in str(e) or attempt == attempts - 1:
                raise
            continue
        if box:
            return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    raise AssertionError(f"{locator} has no box on screen")


def drag(page, src, dst_xy, steps=12):
    x, y = centre(src)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(*dst_xy, steps=steps)
    page.mouse.up()


def drop_module(page, label, x, y):
    """Drag a palette entry onto the canvas at (x, y) of the canvas; returns the new node's id."""
    before = set(page.evaluate("designer.graph.getNodes().map(n => n.id)"))
    box = page.locator("#canvas").bounding_box()
    drag(page, page.locator(".palette-item", has_text=label), (box["x"] + x, box["y"] + y))
    after = page.evaluate("designer.graph.getNodes().map(n => n.id)")
    (new,) = [n for n in after if n not in before]
    return new


def connect(page, src, src_port, dst, dst_port):
    drag(page, port(page, src, f"out:{src_port}"), centre(port(page, dst, f"in:{dst_port}")))


def saved(page):
    """Wait for autosave to finish; return the stored draft."""
    page.evaluate("designer.save()")
    page.wait_for_selector("#save-state >> text=Saved")
    pid = page.evaluate("JSON.parse(document.getElementById('designer-boot').textContent).id")
    return Pipeline.objects.get(pk=pid)


def links(draft):
    return sorted((l["from"]["node"], l["from"]["port"], l["to"]["node"], l["to"]["port"]) for l in draft["links"])


def select(page, nid):
    box = node(page, nid).bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.wait_for_selector(f"#node-form[data-node={nid}]", state="attached")


def set_parameters(page, nid, values):
    """Through the right pane's own controls: number and text boxes, tick boxes, choices."""
    select(page, nid)
    form = page.locator("#node-form")
    for name, value in values.items():
        control = form.locator(f"[data-param={name}]")
        if isinstance(value, bool):
            control.set_checked(value)
        elif control.evaluate("e => e.tagName") == "SELECT":
            control.select_option(str(value))
        else:
            control.fill(str(value))
    # the pane edits the node on the canvas; nothing is marked invalid (a problem of the defaults, such as
    # ResNet's pretrained weights missing on this machine, goes once the values are set)
    try:
        page.wait_for_selector("#node-form [aria-invalid]", state="detached")
    except Exception:
        raise AssertionError(form.inner_text()) from None


CHART_OF = """name => {
  const c = document.querySelector(`#tab-metrics canvas[data-metrics~="${name}"]`);
  const ch = c && Chart.getChart(c);
  if (!ch) return null;
  return {title: c.parentElement.previousElementSibling.textContent, x: ch.options.scales.x.title.text,
          ticks: ch.scales.x.ticks.map(t => t.value), y: ch.options.scales.y.type,
          yTitle: ch.options.scales.y.title.display ? ch.options.scales.y.title.text : '',
          lines: ch.data.datasets.map(d => ({label: d.label, points: d.data}))};
}"""


def chart_of(page, name, timeout=20_000):
    """The Metrics tab's chart that draws metric `name`: {title, x (axis title), ticks, y (its scale's type),
    yTitle, lines: [{label, points}]}."""
    page.wait_for_function(f"({CHART_OF})({name!r}) !== null", timeout=timeout)
    return page.evaluate(f"({CHART_OF})({name!r})")


def metric_points(page, name):
    """How many points the Metrics tab draws of metric `name` (-1: no chart of it yet)."""
    line = page.evaluate(f"(n => {{ const c = ({CHART_OF})(n); const l = c && c.lines.find(l => l.label === n); return l ? l.points.length : -1; }})({name!r})")
    return line


def overlap(a, b, slack=0.5):
    """Do two boxes ({x, y, width, height}) cover a common area (more than a rounding error)?"""
    return (a["x"] + slack < b["x"] + b["width"] and b["x"] + slack < a["x"] + a["width"]
            and a["y"] + slack < b["y"] + b["height"] and b["y"] + slack < a["y"] + a["height"])


def inside(inner, outer, slack=0.5):
    """Is box `inner` within box `outer` (to a rounding error)?"""
    return (inner["x"] >= outer["x"] - slack and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
            and inner["y"] >= outer["y"] - slack and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack)
