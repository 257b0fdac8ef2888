"""Suites' report sections through the generic report: every log of a training suite is
reported, each headed by its preset, and rendered to Markdown and HTML with its plots."""

from harness.eval import EvalRequest, run
from harness.report._data import build_report
from harness.report._render import write_report
from harness.suites.catalog import catalog_design


def test_a_quick_and_a_plateau_k_parity_log_are_both_reported(tmp_path):
    log_dir = tmp_path / "logs"
    for preset in ("quick", "plateau"):
        ok, _, _ = run(
            EvalRequest(
                suite="k-parity",
                models=(),
                task_args={"preset": preset, "arms": "ar,md-optimal", "seeds": 2, "max_steps": 40},
                log_dir=str(log_dir),
                display="none",
            )
        )
        assert ok
    report = build_report([str(log_dir)], catalog_design)
    assert not [r for r in report.scores if r.suite == "k-parity"]  # its section is its table
    assert not report.left_out  # neither log is superseded: their identities differ
    [section] = [s for s in report.sections if s.section.title == "k-parity"]
    headings = sorted(section.section.view(r).heading for r in section.results)
    assert len(headings) == 2
    assert "preset plateau" in headings[0] and "preset quick" in headings[1]
    out = tmp_path / "out" / "report.md"
    written = write_report(report, str(out), "md")
    text = out.read_text()
    assert text.count("### k_parity (preset") == 2 and "not estimable at n = 2" in text
    pngs = [p for p in written if p.endswith(".png")]
    assert len(pngs) == 2 and all(p in text for p in (f.split("/")[-1] for f in pngs))
    html = tmp_path / "out" / "report.html"
    write_report(report, str(html), "html")
    page = html.read_text()
    assert page.count("<h3>k_parity (preset") == 2 and page.count("data:image/png;base64") == 2
