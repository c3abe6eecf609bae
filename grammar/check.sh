#!/usr/bin/env bash
# Verify that the committed generated parsers match their grammars: regenerate
# into a temporary tree and compare with grammar/{tquel,sdl,display}/gen.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash "$repo/grammar/generate.sh" "$tmp"

stale=0
for lang in tquel sdl display; do
	if ! diff -r "$repo/grammar/$lang/gen" "$tmp/grammar/$lang/gen" >"$tmp/$lang.diff" 2>&1; then
		stale=1
		echo "grammar/$lang/gen differs from grammar/$lang/*.g4:" >&2
		head -n 40 "$tmp/$lang.diff" >&2
	fi
done
if [ "$stale" -ne 0 ]; then
	echo "generated parsers are stale: run make grammar" >&2
	exit 1
fi
echo "generated parsers are up to date"
