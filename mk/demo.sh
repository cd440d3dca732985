#!/bin/sh
# `make demo`: shows what this machine can record.
set -e
cd "$(dirname "$0")/.."
./xptrace info
