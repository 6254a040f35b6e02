"""The progress bar: one redrawn line on a terminal, full lines in a log."""

import io

from symdyn.studies.progress import progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_redraws_one_line_with_an_eta():
    out = Terminal()
    report = progress_bar(True, 10, "sweep", stream=out)
    for done in range(11):
        report(done)
    report(None)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.count("\r") == 11
    assert "ETA" in text and text.rstrip().endswith("done")


def test_log_file_gets_full_lines_not_one_endless_line():
    out = io.StringIO()                      # not a terminal
    report = progress_bar(True, 1000, "sweep", stream=out)
    for done in range(1001):
        report(done)
    report(None)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert 1 <= len(lines) <= 3              # the first, (maybe one after 10 s), the last
    assert lines[-1].startswith("sweep [") and "1000/1000" in lines[-1]


def test_silent_and_callable():
    assert progress_bar(False, 3, "x")(1) is None
    seen = []
    progress_bar(lambda d, t: seen.append((d, t)), 3, "x")(2)
    assert seen == [(2, 3)]
