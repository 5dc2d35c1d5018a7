"""JUnit XML for the gate: one testcase per threshold, the format CI systems read.

Built with ``xml.etree.ElementTree`` so escaping is never hand-rolled. A failed
check is a ``<failure>``, and so is an inconclusive one whose policy is ``on_inconclusive: fail`` (type
``inconclusive``); a check without evidence, or an inconclusive one under ``warn`` or ``pass``, a ``<skipped>``
whose message says which; every
testcase carries the measured value, the threshold and the detail in
``<system-out>``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sparsedebug.records.memo import Memo
from sparsedebug.render.words.figures import headline
from sparsedebug.render.words.gate import CHECK_NAMES, detail_words, measured_words, status_label, threshold_words

SUITE = "sparsedebug.gate"


def junit_xml(doc: Memo) -> str:
    """Render the gate verdict of a review document as a JUnit XML document (``<testsuites>`` with one ``<testsuite>``)."""
    result = doc.verdict()
    failures = sum(1 for c in result.checks if c.fails_gate)
    skipped = sum(1 for c in result.checks if c.status in ("skipped", "inconclusive") and not c.fails_gate)
    counts = {
        "tests": str(len(result.checks)),
        "failures": str(failures),
        "errors": "0",
        "skipped": str(skipped),
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": "sparsedebug gate", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, **counts})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "baseline", "value": result.baseline})
    ET.SubElement(props, "property", {"name": "candidate", "value": result.candidate})
    for f in doc.headline:
        ET.SubElement(props, "property", {"name": f.quantity, "value": headline(f)})
    for check in result.checks:
        case = ET.SubElement(suite, "testcase", {"classname": SUITE, "name": check.id, "time": "0"})
        detail = detail_words(check)
        text = f"{CHECK_NAMES[check.id]}\nmeasured: {measured_words(check)}\nthreshold: {threshold_words(check, result.policy)}\n{detail}"
        if check.fails_gate:
            kind = "threshold" if check.status == "fail" else "inconclusive"
            failure = ET.SubElement(case, "failure", {"message": f"{status_label(check)}: {detail}" if kind == "inconclusive" else detail, "type": kind})
            failure.text = text
        elif check.status in ("skipped", "inconclusive"):
            ET.SubElement(case, "skipped", {"message": f"{status_label(check)}: {detail}"})
        out = ET.SubElement(case, "system-out")
        out.text = text
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
