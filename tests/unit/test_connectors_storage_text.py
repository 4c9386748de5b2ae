"""Confluence storage format to plain text: what a reader sees, line breaks kept."""

from __future__ import annotations

from curation.adapters.connectors.storage_text import storage_to_text


def test_paragraphs_become_blank_lines_when_blocks_follow_each_other() -> None:
    assert storage_to_text("<h1>Title</h1><p>One</p><p>Two</p>") == "Title\n\nOne\n\nTwo"


def test_line_breaks_stay_single_when_br_splits_a_paragraph() -> None:
    assert storage_to_text("<p>first<br/>second</p>") == "first\nsecond"


def test_entities_are_decoded_when_the_body_escapes_them() -> None:
    assert (
        storage_to_text("<p>a &amp; b &lt;c&gt; d&nbsp;e &#8211; f</p>") == "a & b <c> d e \u2013 f"
    )


def test_markup_whitespace_collapses_when_the_source_is_indented() -> None:
    assert storage_to_text("<p>\n    spread\n    over   lines\n</p>") == "spread over lines"


def test_list_items_become_bullets_when_they_wrap_paragraphs() -> None:
    body = "<p>Steps:</p><ul><li><p>drain</p></li><li>restart</li></ul><p>Done.</p>"
    assert storage_to_text(body) == "Steps:\n\n- drain\n- restart\n\nDone."


def test_code_macro_keeps_its_cdata_verbatim_when_parameters_are_hidden() -> None:
    body = (
        '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash'
        "</ac:parameter><ac:plain-text-body><![CDATA[if [ $a -lt 2 ]; then\n  echo ok\nfi]]>"
        "</ac:plain-text-body></ac:structured-macro>"
    )
    assert storage_to_text(body) == "if [ $a -lt 2 ]; then\n  echo ok\nfi"


def test_table_cells_are_separated_when_rows_become_lines() -> None:
    body = "<table><tr><th>Host</th><th>Role</th></tr><tr><td>db1</td><td>primary</td></tr></table>"
    assert storage_to_text(body) == "Host | Role\ndb1 | primary"


def test_page_link_shows_the_title_when_the_link_has_no_body() -> None:
    body = '<p>See <ac:link><ri:page ri:content-title="Runbook" /></ac:link> first.</p>'
    assert storage_to_text(body) == "See Runbook first."


def test_vietnamese_text_is_kept_exactly_when_it_has_combining_accents() -> None:
    assert storage_to_text("<p>Hướng dẫn vận hành</p>") == "Hướng dẫn vận hành"
