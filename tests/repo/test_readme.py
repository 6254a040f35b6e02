"""The README's worked examples (every python block, in order) run and print what they say."""

import doctest
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_examples():
    text = README.read_text()
    blocks = [part.split("```", 1)[0] for part in text.split("```python")[1:]]
    assert len(blocks) >= 4, "README lost its worked examples"
    parser = doctest.DocTestParser()
    test = parser.get_doctest("".join(blocks), {}, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0 and runner.tries == len(test.examples)
