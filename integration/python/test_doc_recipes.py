"""The date and time recipe of docs/types.md ("Dates and times in any time
zone": the python block that makes time_recipes_py), run as it is written
there in Python processes of several time zones (TZ): each must print the
output block that follows it in the docs. The JDBC suite does the same
with the java block (integration/jdbc/Recipes.java).
"""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.environ.get("REPO_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC_ADDR = "127.0.0.1:32010"

# Far from UTC both ways, half-hour offsets and half-hour daylight saving.
ZONES = ["America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Kiritimati", "UTC"]


def doc_block(path, marker):
    """The python block of the Markdown file at path holding marker, and
    the output block right after it (<!-- snippet: output -->)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pattern = re.compile(r"^```python\n(.*?)^```\n\s*<!-- snippet: output -->\s*\n```text\n(.*?)^```$", re.S | re.M)
    for code, output in pattern.findall(text):
        if marker in code:
            return code, output
    raise AssertionError(f"no python block with {marker!r} and an output block after it in {path}")


def lines(s):
    return [line.rstrip() for line in s.splitlines() if line.strip()]


@pytest.mark.parametrize("zone", ZONES)
def test_time_recipe_in_every_zone(server, tmp_path, zone):
    code, want = doc_block(os.path.join(ROOT, "docs", "types.md"), "time_recipes_py")
    script = tmp_path / "time_recipes.py"
    script.write_text(code.replace(DOC_ADDR, server.host_port))
    env = dict(os.environ, TZ=zone)
    # The zone takes effect in the child: its local offset is the zone's.
    offset = subprocess.run([sys.executable, "-c", "import time; print(time.timezone)"], env=env,
                            capture_output=True, text=True, check=True).stdout.strip()
    assert (offset == "0") == (zone == "UTC"), f"TZ={zone}: time.timezone is {offset}"
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ERROR" not in out.stderr, out.stderr
    assert lines(out.stdout) == lines(want)
