#!/usr/bin/env bash
# tls_certs.sh DIR — test certificates for the TLS tests, made with the
# openssl command: a CA (ca.crt), a server certificate for 127.0.0.1 and
# localhost (server.crt, server.key), a client certificate from the same
# CA (client.crt, client.key), a second server certificate
# (server2.crt/key, for a reload), and a client certificate from another
# CA (bad.crt, bad.key), which the server must refuse. Keys are unencrypted
# but server-pass.key, the server key under the passphrase "pw".
set -euo pipefail
d=$1
mkdir -p "$d"
cd "$d"
o() { openssl "$@" 2>/dev/null; }
o req -x509 -new -nodes -newkey rsa:2048 -keyout ca.key -out ca.crt -days 2 -subj "/CN=shmkv test CA"
o req -x509 -new -nodes -newkey rsa:2048 -keyout other-ca.key -out other-ca.crt -days 2 -subj "/CN=other CA"
cert() { # NAME CA CN [EXT]
    o req -new -nodes -newkey rsa:2048 -keyout "$1.key" -out "$1.csr" -subj "/CN=$3"
    if [ -n "${4:-}" ]; then
        printf '%s\n' "$4" >"$1.ext"
        o x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" -days 2 -extfile "$1.ext"
    else
        o x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" -days 2
    fi
}
cert server ca localhost "subjectAltName=IP:127.0.0.1,DNS:localhost"
cert server2 ca localhost "subjectAltName=IP:127.0.0.1,DNS:localhost"
cert client ca client
cert bad other-ca client
o pkey -in server.key -aes256 -passout pass:pw -out server-pass.key
