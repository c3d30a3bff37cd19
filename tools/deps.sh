#!/usr/bin/env bash
# Installs tokperf's build and test dependencies from Debian's packages.
# Run as root (or through sudo) on Debian 12; it does nothing else.
set -euo pipefail
pkgs=(
  gcc g++ meson ninja-build pkg-config
  libuv1-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
  libjansson-dev libsentencepiece-dev sentencepiece libssl-dev openssl
  libcurl4-openssl-dev libpcre2-dev libutf8proc-dev
  python3 python3-grpcio python3-grpc-tools python3-aiohttp
  nghttp2-client nghttp2-server
  chromium clang libclang-rt-14-dev valgrind
  libopenmpi-dev openmpi-bin iproute2
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
