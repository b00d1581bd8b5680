"""course_lib.core.results: TrainResult checks its arguments."""
import pytest

from course_lib.core import results
from helpers import raises_naming


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
@pytest.mark.timeout(30)
def test_train_result_checks():
    r = results.TrainResult(None, {"loss": [3.0, 2.0, 1.0]}, 1.0)
    assert r.last() == 1.0 and r.final(frac=1.0) == 2.0
    raises_naming(ValueError, "frac", r.final, "loss", 0.0)
    raises_naming(ValueError, "frac", r.final, "loss", float("nan"))
    raises_naming(TypeError, "key", r.last, ["loss"])
    raises_naming(TypeError, "history", results.TrainResult, None, [1, 2])
    raises_naming(ValueError, "seconds", results.TrainResult, None, {}, -1.0)
