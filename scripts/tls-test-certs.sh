#!/usr/bin/env bash
# Makes throwaway TLS material for the TLS tests (Rust transport tests and
# tests/process/test_tls.py) in DIR, with the openssl CLI:
#   ca.pem, ca.key          a CA
#   server.pem              the server's keystore: certificate (SAN IP 127.0.0.1,
#                           DNS localhost), then the CA, then the private key (PEM)
#   server.crt, server.key  the same, apart
#   client.crt, client.key  a client certificate signed by the CA
#   rogue.crt, rogue.key    a client certificate signed by another CA
#   node.pem                a node's keystore for internode TLS (server and
#                           client use), signed by the CA: certificate, CA, key
#   rogue-node.pem          the same, signed by the other CA
#   rogue-ca.pem            the other CA
# EC P-256 keys (fast to make), valid for ten years.
#   scripts/tls-test-certs.sh DIR
set -euo pipefail
DIR=${1:?usage: tls-test-certs.sh DIR}
mkdir -p "$DIR"
cd "$DIR"
command -v openssl >/dev/null || { echo "openssl not found (scripts/setup-build.sh installs it)" >&2; exit 1; }
DAYS=3650
# openssl's chatter goes to a log shown only when a step fails.
quiet() { "$@" 2>openssl.log || { cat openssl.log >&2; exit 1; }; }
newkey() { quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() { # NAME CN
    newkey "$1.key"
    quiet openssl req -x509 -new -key "$1.key" -out "$1.pem" -days $DAYS -subj "/CN=$2" \
        -config /dev/null -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign,cRLSign -addext subjectKeyIdentifier=hash
}
leaf() { # NAME CN CA USAGE [SAN]
    newkey "$1.key"
    quiet openssl req -new -key "$1.key" -subj "/CN=$2" -config /dev/null -out "$1.csr"
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=$4"
        echo "subjectKeyIdentifier=hash"
        echo "authorityKeyIdentifier=keyid"
        if [ -n "${5:-}" ]; then echo "subjectAltName=$5"; fi
    } > "$1.ext"
    quiet openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial \
        -days $DAYS -extfile "$1.ext" -out "$1.crt"
    rm -f "$1.csr" "$1.ext"
}
ca ca "Rocksandra test CA"
ca rogue-ca "Some other CA"
leaf server 127.0.0.1 ca serverAuth "IP:127.0.0.1,DNS:localhost"
leaf client "test client" ca clientAuth
leaf rogue "rogue client" rogue-ca clientAuth
leaf node "rocksandra node" ca serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
leaf rogue-node "rogue node" rogue-ca serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
cat server.crt ca.pem server.key > server.pem
cat node.crt ca.pem node.key > node.pem
cat rogue-node.crt rogue-ca.pem rogue-node.key > rogue-node.pem
rm -f ./*.srl openssl.log
