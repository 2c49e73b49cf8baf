#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-links.py: every relative link and #anchor of the project's Markdown must resolve.

usage: scripts/check-links.py [FILE.md ...]
  Without files: README.md, doc/**/*.md, python/README.md and stir/**/*.md. Links with a scheme (https:, mailto:)
  are not followed. A link's path must name a file or folder inside the repository; its #anchor must be a heading
  of the target as GitHub names it (lower case, punctuation dropped, spaces to hyphens, -1, -2 ... for repeats), an
  explicit <a name=...> / id=..., or #L<n>[-L<m>] within a non-Markdown file's lines. Python 3 standard library only.
Exit status: 0 when everything resolves, 1 otherwise (each failure printed as file:line), 2 on bad usage.
"""
import os
import re
import sys
import urllib.parse

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
DEFAULT_GLOBS = [('.', 'README.md', False), ('doc', '.md', True), ('python', 'README.md', False), ('stir', '.md', True)]

FENCE = re.compile(r'^ {0,3}(`{3,}|~{3,})')
ATX = re.compile(r'^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$')
SETEXT = re.compile(r'^ {0,3}(=+|-+)[ \t]*$')
CODE_SPAN = re.compile(r'(`+)(.+?)\1', re.S)
# [text](target "title") and ![alt](target); the text may hold one level of brackets (an image inside a link)
INLINE_LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)'
                         r'(?:\s+(?:"[^"]*"|\'[^\']*\'|\([^)]*\)))?\s*\)')
REF_DEF = re.compile(r'^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)')
HTML_LINK = re.compile(r'<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["\']([^"\']*)["\']', re.I)
HTML_ANCHOR = re.compile(r'<[a-z][^>]*?\b(?:name|id)\s*=\s*["\']([^"\']+)["\']', re.I)
HTML_TAG = re.compile(r'<[^>]+>')
SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*:')
LINE_ANCHOR = re.compile(r'^L(\d+)(?:-L(\d+))?$')


def default_files():
    files = []
    for folder, suffix, recursive in DEFAULT_GLOBS:
        base = os.path.join(ROOT, folder)
        if not recursive:
            path = os.path.join(base, suffix)
            if os.path.isfile(path):
                files.append(path)
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            files.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(suffix))
    return files


def text_lines(path):
    """The file's lines, each with its number, outside fenced code blocks (and a flag for lines inside them)."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    fence = None
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            yield number, line, True
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
                fence = None
            yield number, line, True
        else:
            yield number, line, False


def heading_text(raw):
    """The text GitHub renders for a heading's Markdown: code spans kept literally, links reduced to their text,
    emphasis markers and HTML tags dropped."""
    parts = []
    pos = 0
    for m in CODE_SPAN.finditer(raw):
        parts.append((raw[pos:m.start()], False))
        parts.append((m.group(2).strip(), True))
        pos = m.end()
    parts.append((raw[pos:], False))
    out = []
    for text, literal in parts:
        if not literal:
            text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)
            text = HTML_TAG.sub('', text)
            text = text.replace('*', '')
            text = re.sub(r'(?<![\w])_+|_+(?![\w])', '', text)
            text = text.replace('\\', '')
        out.append(text)
    return ''.join(out)


def slug(text):
    text = text.strip().lower()
    text = ''.join(c for c in text if c.isalnum() or c in '-_ ')
    return text.replace(' ', '-')


_anchor_cache = {}


def markdown_anchors(path):
    if path in _anchor_cache:
        return _anchor_cache[path]
    anchors = set()
    counts = {}
    previous = None
    for number, line, in_code in text_lines(path):
        if not in_code:
            for m in HTML_ANCHOR.finditer(line):
                anchors.add(m.group(1))
        heading = None
        if not in_code:
            m = ATX.match(line)
            if m:
                heading = re.sub(r'[ \t]+#+$', '', m.group(2) or '')
                if heading.strip('#').strip() == '':
                    heading = ''
            elif SETEXT.match(line) and previous is not None and previous.strip() and not ATX.match(previous) \
                    and not (set(line.strip()) == {'-'} and previous.lstrip().startswith(('-', '*', '+', '|'))):
                heading = previous.strip()
        if heading is not None:
            base = slug(heading_text(heading))
            n = counts.get(base, 0)
            anchors.add(base if n == 0 else '%s-%d' % (base, n))
            counts[base] = n + 1
        previous = None if in_code else line
    _anchor_cache[path] = anchors
    return anchors


def check_target(source, target):
    """None when the link resolves, else the reason it does not."""
    if target.startswith('<') and target.endswith('>'):
        target = target[1:-1]
    if not target or SCHEME.match(target) or target.startswith('//'):
        return None
    path_part, _, anchor = target.partition('#')
    path_part = urllib.parse.unquote(path_part.split('?', 1)[0])
    anchor = urllib.parse.unquote(anchor)
    if path_part == '':
        dest = source
    elif path_part.startswith('/'):
        dest = os.path.normpath(os.path.join(ROOT, path_part.lstrip('/')))
    else:
        dest = os.path.normpath(os.path.join(os.path.dirname(source), path_part))
    if os.path.commonpath([os.path.realpath(dest), ROOT]) != ROOT:
        return 'points outside the repository'
    if not os.path.exists(dest):
        return 'no such file or folder'
    if not anchor:
        return None
    if os.path.isdir(dest):
        readme = os.path.join(dest, 'README.md')
        if not os.path.isfile(readme):
            return 'an anchor into a folder without README.md'
        dest = readme
    if dest.endswith('.md'):
        if anchor in markdown_anchors(dest):
            return None
        return 'no heading or anchor "#%s" in %s' % (anchor, os.path.relpath(dest, ROOT))
    m = LINE_ANCHOR.match(anchor)
    if m:
        with open(dest, 'rb') as f:
            count = f.read().count(b'\n') + 1
        if all(int(g) <= count for g in m.groups() if g):
            return None
        return 'line anchor "#%s" past the end of %s (%d lines)' % (anchor, os.path.relpath(dest, ROOT), count)
    return 'anchor "#%s" in a file that is not Markdown' % anchor


def links(path):
    for number, line, in_code in text_lines(path):
        if in_code:
            continue
        bare = CODE_SPAN.sub(lambda m: ' ' * len(m.group(0)), line)
        m = REF_DEF.match(bare)
        if m:
            yield number, m.group(1)
            continue
        for m in INLINE_LINK.finditer(bare):
            yield number, m.group(1)
        for m in HTML_LINK.finditer(bare):
            yield number, m.group(1)


def main(argv):
    if any(a in ('-h', '--help') for a in argv):
        print(__doc__.strip())
        return 0
    files = []
    for a in argv:
        if a.startswith('-'):
            print('check-links.py: unknown option %s (--help)' % a, file=sys.stderr)
            return 2
        p = os.path.realpath(a)
        if not os.path.isfile(p):
            print('check-links.py: %s: no such file' % a, file=sys.stderr)
            return 2
        files.append(p)
    if not files:
        files = default_files()
    failures = 0
    count = 0
    for path in files:
        for number, target in links(path):
            count += 1
            reason = check_target(path, target)
            if reason:
                failures += 1
                print('%s:%d: %s: %s' % (os.path.relpath(path, ROOT), number, target, reason))
    if failures:
        print('check-links: %d of %d links in %d Markdown files do not resolve' % (failures, count, len(files)))
        return 1
    print('check-links: %d links in %d Markdown files resolve' % (count, len(files)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
