"""Confluence storage format (XHTML with ac:/ri: elements) as readable plain text."""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Elements that start and end a paragraph of their own.
_BLOCKS = frozenset(
    {
        "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "table", "blockquote",
        "pre", "hr", "section", "article", "header", "footer", "dl",
        "ac:structured-macro", "ac:layout-section", "ac:layout-cell", "ac:task-list",
    }
)  # fmt: skip
_LINES = frozenset({"br", "tr", "dt", "dd", "ac:task"})
# Macro parameters ("language=python") and code are not prose a reader would see.
_HIDDEN = frozenset({"script", "style", "ac:parameter", "ac:task-id", "ac:task-status"})
_VERBATIM = frozenset({"pre", "ac:plain-text-body"})
_SPACES = re.compile(r"[ \t\r\n\f\v\xa0]+")
_TRAILING = re.compile(r"[ \t]+\n")
_GAPS = re.compile(r"\n{3,}")
_BULLET = "- "


class _StorageText(HTMLParser):
    """Collects text, turning block boundaries into blank lines and <br> into newlines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._out: list[str] = []
        self._hidden = 0
        self._verbatim = 0
        self._items = 0  # open <li>: paragraphs inside a list item stay on single lines
        # An ac:link with no body shows the linked page's title, as Confluence renders it.
        self._link_start: int | None = None
        self._link_title = ""

    def text(self) -> str:
        joined = _TRAILING.sub("\n", "".join(self._out))
        return _GAPS.sub("\n\n", joined).strip()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _VERBATIM:
            self._verbatim += 1
        if tag in _BLOCKS:
            self._break(2)
        elif tag in _LINES:
            self._break(1)
        elif tag == "li":
            self._items += 1
            self._break(1)
            self._out.append(_BULLET)
        elif tag in {"td", "th"} and not self._at_line_start():
            self._out.append(" | ")
        elif tag == "ac:link":
            self._link_start, self._link_title = len(self._out), ""
        elif tag in {"ri:page", "ri:attachment"}:
            found = dict(attrs)
            self._link_title = found.get("ri:content-title") or found.get("ri:filename") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _VERBATIM:
            self._verbatim = max(0, self._verbatim - 1)
        if tag in _BLOCKS:
            self._break(2)
        elif tag == "li":
            self._items = max(0, self._items - 1)
        elif tag == "ac:link":
            self._close_link()

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if self._verbatim:
            self._out.append(data)
            return
        text = _SPACES.sub(" ", data)
        if self._at_line_start():
            text = text.lstrip()
        if text:
            self._out.append(text)

    def unknown_decl(self, data: str) -> None:
        # Code macros keep their source in CDATA sections: `<![CDATA[...]]>`.
        if data.startswith("CDATA[") and not self._hidden:
            self._out.append(data.removeprefix("CDATA["))

    def handle_comment(self, data: str) -> None:
        # Newer html.parser versions report CDATA outside foreign content as a comment.
        if data.startswith("[CDATA[") and not self._hidden:
            self._out.append(data.removeprefix("[CDATA[").removesuffix("]]"))

    def _close_link(self) -> None:
        start, self._link_start = self._link_start, None
        if start is not None and not "".join(self._out[start:]).strip() and self._link_title:
            self._out.append(self._link_title)

    def _at_line_start(self) -> bool:
        # Right after a bullet counts too, so `<li><p>x</p></li>` stays "- x".
        return not self._out or self._out[-1] == _BULLET or self._out[-1].endswith("\n")

    def _break(self, newlines: int) -> None:
        if not self._out or self._out[-1] == _BULLET:
            return
        if self._items:
            newlines = 1
        tail = 0
        for part in reversed(self._out):
            kept = part.rstrip("\n")
            tail += len(part) - len(kept)
            if kept:
                break
        if tail < newlines:
            self._out.append("\n" * (newlines - tail))


def storage_to_text(xhtml: str) -> str:
    """Plain text of a storage-format body: tags gone, entities decoded, paragraphs kept."""
    parser = _StorageText()
    parser.feed(xhtml)
    parser.close()
    return parser.text()
