"""A griffe extension for the API reference: the docstrings' reST idioms, shown as Markdown.

The library's docstrings are written for ``help()`` and doctest, with Sphinx
roles (``:class:`~sqlalchemy_seqkeys.WorkerLease```) and literal blocks
introduced by ``Example::``. mkdocstrings renders docstrings as Markdown, where
both show up raw. This turns a role into inline code naming the object (the
last dotted part when the target starts with ``~``, as Sphinx shows it) and
``Example::`` into ``Example:``; the indented block after it is already a
Markdown code block. Roles become code, not links, so a reference to an object
the site does not render (a private module's class) cannot break the strict
build.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|data|attr|mod|exc|obj|const):`(~?)([^`]+)`")
_LITERAL = re.compile(r"(?m)(\S)::[ \t]*$")


def _role(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def markdown_of(docstring: str) -> str:
    """The docstring with its Sphinx roles as code and ``Example::`` as ``Example:``.

    >>> markdown_of("Raises :class:`~a.b.NoWorkerIdError`.\\n\\nExample::")
    'Raises `NoWorkerIdError`.\\n\\nExample:'
    """
    return _LITERAL.sub(r"\1:", _ROLE.sub(_role, _fields_last(docstring)))


_FIELD = re.compile(r":(?:param|type|raises?|returns?|rtype|yields?|var|ivar|cvar)\b")


def _fields_last(docstring: str) -> str:
    """The docstring with the text that follows its field list (an ``Example::`` after the
    ``:param`` fields) moved before the fields, where the Sphinx-style parser shows it
    (it reads a field's description up to the next field or the end).

    >>> _fields_last("Doc.\\n\\n:param a: one.\\n  More.\\n\\nExample::\\n\\n    f(1)")
    'Doc.\\n\\nExample::\\n\\n    f(1)\\n\\n:param a: one.\\n  More.'
    """
    lines = docstring.split("\n")
    first = next((i for i, line in enumerate(lines) if _FIELD.match(line)), None)
    if first is None:
        return docstring
    for i in range(first + 1, len(lines)):
        line = lines[i]
        if line and not line[0].isspace() and not _FIELD.match(line) and not lines[i - 1].strip():
            fields = "\n".join(lines[first:i]).rstrip()
            after = "\n".join(lines[i:]).rstrip()
            before = "\n".join(lines[:first]).rstrip()
            return "\n\n".join(part for part in (before, after, fields) if part)
    return docstring


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring as it is loaded (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_of(obj.docstring.value)


class SyncLeaseAttributes(griffe.Extension):
    """``x = _FromSyncLease[T]("doc")`` (``AsyncWorkerLease``): shown as the read-only ``x: T``.

    The descriptor reads the attribute of the wrapped ``WorkerLease``; the
    reference shows it as the property it behaves as, with the doc it is given,
    never the private class.
    """

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        call = attr.value
        if not isinstance(call, griffe.ExprCall):
            return
        function = call.function
        if isinstance(function, griffe.ExprSubscript) and str(function.left) == "_FromSyncLease":
            attr.annotation, attr.value = function.slice, None
            attr.labels = {"property"}
            doc = call.arguments[0] if call.arguments else None
            if isinstance(doc, str):  # a string literal, as griffe renders it: quoted
                attr.docstring = griffe.Docstring(ast.literal_eval(doc), parent=attr)
