#!/bin/sh
# Regenerates the TEST-ONLY PKI in this directory with the openssl CLI.
# Never trust these certificates anywhere: their private keys are public.
#
#   test-ca.pem / test-ca.key            test CA the tests trust
#   localhost.pem / localhost.key        localhost, 127.0.0.1, ::1; valid for 100 years
#   expired.pem / expired.key            localhost, 127.0.0.1, ::1; valid only in 2000
#   other-name.pem / other-name.key      other.example only
#   partial-wildcard.pem / .key          w*.test.example only (a partial wildcard clients must refuse)
#   untrusted-ca.pem / untrusted-ca.key  a second CA the tests never trust
#   untrusted.pem / untrusted.key        localhost, 127.0.0.1, ::1, issued by the untrusted CA
#
# Server certificate files hold the leaf followed by its issuer (a full chain).
set -eu
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

days=36500
localhost_san="subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() { # name, subject
    key "$1.key"
    openssl req -x509 -new -key "$1.key" -sha256 -days "$days" -subj "$2" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$1.pem"
}

# issue name, ca, san, startdate, enddate (openssl ca, which accepts explicit validity dates)
issue() {
    key "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=$1 (CloudStorage tests)" -out "$work/$1.csr"
    : > "$work/index.txt"
    cat > "$work/ca.cnf" <<CNF
[ ca ]
default_ca = test
[ test ]
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
[ anything ]
commonName = supplied
[ leaf ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
$3
CNF
    openssl rand -hex 16 > "$work/serial"
    openssl ca -batch -notext -config "$work/ca.cnf" -extensions leaf -cert "$2.pem" -keyfile "$2.key" \
        -startdate "$4" -enddate "$5" -in "$work/$1.csr" -out "$work/$1.leaf.pem" 2>/dev/null
    cat "$work/$1.leaf.pem" "$2.pem" > "$1.pem"
}

ca test-ca "/CN=CloudStorage Test CA (test only)"
ca untrusted-ca "/CN=CloudStorage Untrusted Test CA (test only)"
now=$(date -u -d "-1 day" +%Y%m%d%H%M%SZ)
later=$(date -u -d "+$days days" +%Y%m%d%H%M%SZ)
issue localhost test-ca "$localhost_san" "$now" "$later"
issue expired test-ca "$localhost_san" 20000101000000Z 20010101000000Z
issue other-name test-ca "subjectAltName=DNS:other.example" "$now" "$later"
issue partial-wildcard test-ca "subjectAltName=DNS:w*.test.example" "$now" "$later"
issue untrusted untrusted-ca "$localhost_san" "$now" "$later"
echo "regenerated test-only certificates in $(pwd)"
