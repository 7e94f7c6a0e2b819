#!/usr/bin/env bash
# Regenerates the TEST-ONLY RSA keys of this directory with the openssl command-line tool.
#   service-account.key      PKCS #8 RSA 2048 private key, as in Google's service-account key files
#   service-account.pub      its public key (PUBLIC KEY)
#   service-account.crt      a self-signed certificate for it (Google publishes account keys as certificates)
#   service-account-pkcs1.key the same key as PKCS #1 (RSA PRIVATE KEY)
#   encrypted.key            a passphrase-protected PKCS #8 key (must be refused, never prompt)
#   rsa-1024.key             a too-short RSA key (must be refused)
#   known-answer.txt / .sig  a message and its RS256 signature under service-account.key
#   second-account.key       another PKCS #8 RSA 2048 key: a second service account for the emulator's auth tests
set -euo pipefail
cd "$(dirname "$0")"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out service-account.key
openssl pkey -in service-account.key -pubout -out service-account.pub
openssl req -new -x509 -key service-account.key -subj "/CN=test-account@cloudstorage-test.iam.gserviceaccount.com" \
    -days 36500 -out service-account.crt
openssl pkey -in service-account.key -traditional -out service-account-pkcs1.key
openssl pkcs8 -topk8 -in service-account.key -v2 aes-256-cbc -passout pass:secret -out encrypted.key
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out rsa-1024.key
printf 'CloudStorage RS256 known answer\n' > known-answer.txt
openssl dgst -sha256 -sign service-account.key -out known-answer.sig known-answer.txt
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out second-account.key
