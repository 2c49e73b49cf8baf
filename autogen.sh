#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# autogen.sh: generates configure and the Makefile templates (needs autoconf, automake, libtool)
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force
