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
#   service-account.json / authorized-user.json  key files in Google's JSON format (see the end)
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
# Key files in Google's JSON format, built from service-account.key (the emulator-auth and credential tests use them):
#   service-account.json     a "service_account" key file (token_uri Google's; tests point it at their own server)
#   authorized-user.json     an "authorized_user" file as gcloud auth application-default login writes it
key_json=$(awk '{printf "%s\\n", $0}' service-account.key)
cat > service-account.json <<JSON
{
  "type": "service_account",
  "project_id": "cloudstorage-test",
  "private_key_id": "0123456789abcdef0123456789abcdef01234567",
  "private_key": "$key_json",
  "client_email": "test-account@cloudstorage-test.iam.gserviceaccount.com",
  "client_id": "100000000000000000001",
  "auth_uri": "https://accounts.google.com/o/oauth2/auth",
  "token_uri": "https://oauth2.googleapis.com/token",
  "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
  "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/test-account%40cloudstorage-test.iam.gserviceaccount.com",
  "universe_domain": "googleapis.com"
}
JSON
cat > authorized-user.json <<JSON
{
  "account": "",
  "client_id": "test-client.apps.googleusercontent.com",
  "client_secret": "TEST-ONLY-client-secret",
  "quota_project_id": "cloudstorage-test-quota",
  "refresh_token": "TEST-ONLY-refresh-token",
  "type": "authorized_user",
  "universe_domain": "googleapis.com"
}
JSON
