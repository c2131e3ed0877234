"""bench_outside_check: a run past its bounds is refused before anything starts."""

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize(("creates", "seconds"), [("0,65", 5), ("-1", 5), ("16", 0), ("16", 61)])
def test_a_run_past_its_bounds_is_refused(creates, seconds):
    with pytest.raises(CommandError, match="creates: 0 to 64 each; seconds: more than 0, at most 60"):
        call_command("bench_outside_check", creates=creates, seconds=seconds)
