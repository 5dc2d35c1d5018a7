"""The attribution sentence of the memo: shares of the net change, and what offsets one above 100%."""

from __future__ import annotations

from sparsedebug.records.classification import AttributedPart, Attribution, Classification, Mechanism, MechanismShare
from sparsedebug.records.notes import note
from sparsedebug.render.markdown.verdicts import attributed_lines, attribution_sentence


def _classification(shares: list[tuple[Mechanism, float]], delta: float, unattributed: float, residual: float | None,
                    against: list[str] | None = None) -> Classification:
    parts = [AttributedPart(part=f"{m.value}-part", kind="kernel", mechanism=m, ms=ms, evidence=note("mechanisms.part_host_gap")) for m, ms in shares]
    att = Attribution(
        base_p50_ms=100.0, cand_p50_ms=100.0 + delta, delta_ms=delta, parts=parts,
        mechanisms=[MechanismShare(mechanism=m, ms=ms, share=ms / delta, largest=f"{m.value}-part", parts=1,
                                   against=against if i == 0 and against else []) for i, (m, ms) in enumerate(shares)],
        unattributed_ms=unattributed, busy_residual_ms=residual,
    )  # fmt: skip
    return Classification(
        run="cand", scores=[], evidence=[], missing_evidence=[], winner=shares[0][0], ranked_by="attribution",
        attribution=att, proof=None, fix=None,
    )  # fmt: skip


def test_a_share_within_the_change_reads_plainly() -> None:
    cls = _classification([(Mechanism.SCHEDULING, 130.057), (Mechanism.COMPUTE, 27.386)], 154.315, -3.128, -3.128)
    assert attribution_sentence(cls) == "mechanism scheduling carries 130.057 ms of the +154.315 ms change (84%)"
    lines = attributed_lines(cls, 18.6)
    assert lines[-1] == (
        "  - Not attributed to any mechanism: -3.128 ms of the change (-3.128 ms of it busy time the layers' kernel "
        "timings do not carry: ops outside the layers, or kernels timed apart from the forward)."
    )


def test_a_share_above_the_whole_change_names_what_offsets_it() -> None:
    # The shape of the old default walk's memo ("scheduling carries 241.050 ms of the +69.876 ms change (345%)",
    # with nothing said about the -171 ms that made that possible).
    # What pulls back is the record's (MechanismShare.against, largest first, as classify.attribution writes it).
    cls = _classification([(Mechanism.SCHEDULING, 241.050), (Mechanism.COMPUTE, -44.0)], 69.876, -127.174, None,
                          against=["unattributed", "compute"])
    assert attribution_sentence(cls) == (
        "mechanism scheduling carries 241.050 ms of the +69.876 ms change (345%), more than the whole change: "
        "the other parts offset -171.174 ms (unattributed -127.174 ms, compute -44.000 ms)"
    )
    assert attributed_lines(cls, 1.0)[-1] == "  - Not attributed to any mechanism: -127.174 ms of the change."
