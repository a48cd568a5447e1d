"""The plugin's own tests: Lens's contract kit checks the installed distribution.

Run with ``python -m pytest tests`` after ``pip install .``.
"""


def test_nimbus_lens_honours_the_lens_contract(lens_contract):
    lens_contract.assert_ok("nimbus-lens")
