# SPDX-License-Identifier: Apache-2.0
# doxygen-filter.sed: lets Doxygen read the plain C comments of the public headers as documentation (make doc).
# The file's first line describes the file, and so do the overview blocks (a lone "/*" line opens them); a comment
# on its own line describes what follows; a comment after code on the same line describes that member; the section
# rules ("/* ---- ...") stay plain comments.
1s|^/\* \([^ :]*\): |/** @file \1 |
s|^/\*$|/** @file|
/^[[:space:]]*\/\* ----/b
s|^\([[:space:]]*\)/\* |\1/** |
s|\([^[:space:]/*].*\)/\* |\1/**< |
