#!/usr/bin/env bash
# Installs what building Rocksandra needs on a fresh Debian machine
# (bindgen's libclang, a C++ compiler), what its tests need besides the
# Python virtualenv (python3-venv, openssl), and what scripts/package.sh
# needs (binutils, dpkg-dev), then nothing else. Idempotent.
set -euo pipefail
need=()
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v g++ >/dev/null 2>&1 || need+=(g++)
# The driver tests run in a Python virtualenv (scripts/test-env.sh).
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
# The TLS tests make their certificates with the openssl CLI (scripts/tls-test-certs.sh).
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# The Node.js driver tests (tests/drivers/node) need Node.js 20 and npm.
node_ok() { node -e 'process.exit(+process.versions.node.split(".")[0] < 20)' 2>/dev/null; }
node_ok || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# The Java driver tests (tests/drivers/java) build with JDK 17 and Maven.
ls /usr/lib/jvm/java-17-openjdk-*/bin/javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
# scripts/package.sh: strip, and dpkg-shlibdeps for the .deb's library dependencies.
command -v strip >/dev/null 2>&1 || need+=(binutils)
command -v dpkg-shlibdeps >/dev/null 2>&1 || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust with rustup first" >&2; exit 1; }
