#!/usr/bin/env bash
# Fetches a tarball, checks its SHA-256 and unpacks it into a folder that did not exist:
# the one way scripts/ bring in sources from elsewhere (into .cache/, never committed).
#   scripts/fetch-checked.sh URL SHA256 INTO
# INTO holds the tarball's contents, whole or not at all (unpacked beside it, then moved).
set -euo pipefail
url=$1 sha=$2 into=$3
mkdir -p "$(dirname "$into")"
tmp=$(mktemp -d "$(dirname "$into")/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
curl -sSfL --retry 3 -o "$tmp/source.tar.gz" "$url"
echo "$sha  $tmp/source.tar.gz" | sha256sum -c --quiet -
mkdir "$tmp/unpacked"
tar -xzf "$tmp/source.tar.gz" -C "$tmp/unpacked"
rm -rf "$into"
mv "$tmp/unpacked" "$into"
