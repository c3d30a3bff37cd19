#!/usr/bin/env bash
# Installs what building tokperf and running tools/demo.sh need, from Debian's
# packages, plus any package named on the command line (tools/test.sh names
# the test-only ones: browsers, fuzzing and MPI toolchains, Python peers).
# Run as root (or through sudo) on Debian 12; it does nothing else.
set -euo pipefail
pkgs=(
  gcc g++ meson ninja-build pkg-config
  libuv1-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
  libjansson-dev libsentencepiece-dev libssl-dev
  libcurl4-openssl-dev libpcre2-dev libutf8proc-dev
  # spm_train: the build trains the small sentencepiece models the demo and
  # the tests count tokens with (test/data/meson.build)
  sentencepiece
  "$@"
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
