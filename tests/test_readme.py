"""The README's worked example runs and prints what it says."""

import doctest
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples():
    text = README.read_text()
    block = text.split("```python", 1)[1].split("```", 1)[0]
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block, {}, "README", str(README), 0)
    assert test.examples, "README lost its worked example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0
