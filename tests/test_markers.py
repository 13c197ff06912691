"""The marker comments: what the rewrite writes is what every reader reads back."""

from neuron_migrate import markers


def test_a_todo_reads_back_as_written():
    written = markers.comment("NM110", "manual", "call optimizer.step() yourself")
    assert written == "# TODO(neuron-migrate NM110): call optimizer.step() yourself"
    marker = markers.parse("    " + written)
    assert (marker.rules, marker.todo, marker.text, marker.start) == (("NM110",), True, "call optimizer.step() yourself", 4)


def test_a_review_note_is_no_todo():
    marker = markers.parse(markers.comment("NM513", "review", "check the flags"))
    assert (marker.rule, marker.todo, marker.text) == ("NM513", False, "check the flags")


def test_a_line_tag_names_its_rules_and_no_single_rule():
    tag = markers.tag(["NM101", "NM420"])
    assert tag == "# TODO(neuron-migrate NM101, NM420): see above"
    marker = markers.parse(tag)
    assert (marker.rules, marker.rule) == (("NM101", "NM420"), "")


def test_find_reads_a_marker_after_code():
    marker = markers.find("x = f()  # neuron-migrate(NM160): names differ")
    assert (marker.rule, marker.start, marker.text) == ("NM160", 9, "names differ")


def test_other_comments_are_no_markers():
    for comment in ("# neuron-migrate: ignore[NM101]", "# TODO: fix", "# neuron-migrate will handle it", ""):
        assert markers.parse(comment) is None
        assert markers.find(comment) is None


def test_mentions_tells_a_todo_from_a_review_note():
    review = markers.comment("NM604", "review", "seed")
    assert markers.mentions(review, "NM604")
    assert not markers.mentions(review, "NM604", todo_only=True)
    assert markers.mentions(markers.comment("NM152", "manual", "decide"), "NM152", todo_only=True)
    assert not markers.mentions(review, "NM60")
