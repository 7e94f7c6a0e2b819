package import NativeTLS

/// The service accounts the emulator knows, by email, with their keys read once at start.
///
/// The token endpoint verifies JWTs with ``Account/publicKey``, IAM `signBlob` signs with
/// ``Account/privateKey``, and V4 signed URLs are verified with the public key of the account
/// named in their credential scope (``publicKey(for:)``).
package final class ServiceAccountTable: Sendable {
    /// One account.
    package struct Account: Sendable {
        /// The account's `client_email`.
        package let email: String
        /// Verifies its signatures (a private key verifies as its public half).
        package let publicKey: RSAKey
        /// Signs for it (`signBlob`), when configured.
        package let privateKey: RSAKey?
        /// The configured key id, or one derived from the public key.
        package let keyID: String
        /// Whether ``keyID`` was configured (then a JWT's `kid`, when present, must equal it).
        package let keyIDIsConfigured: Bool
    }

    private let accounts: [String: Account]

    /// Reads every account's keys.
    ///
    /// - Throws: ``StorageEmulator/EmulatorError`` naming the account whose key cannot be read,
    ///   whose private key does not match its public key, or which is listed twice.
    package init(_ configured: [StorageEmulator.Authentication.ServiceAccount]) throws(StorageEmulator.EmulatorError) {
        var accounts: [String: Account] = [:]
        for account in configured {
            let email = account.email
            guard !email.isEmpty, accounts[email] == nil else {
                throw .init(description: "Service account '\(email)' is empty or listed twice.")
            }
            let publicKey: RSAKey
            let privateKey: RSAKey?
            let fingerprint: [UInt8]
            do {
                publicKey =
                    account.privateKeyPEM == account.publicKeyPEM
                    ? try RSAKey(privateKeyPEM: Array(account.publicKeyPEM.utf8))
                    : try RSAKey(publicKeyPEM: Array(account.publicKeyPEM.utf8))
                privateKey = try account.privateKeyPEM.map { pem throws(TLSError) in
                    try RSAKey(privateKeyPEM: Array(pem.utf8))
                }
                fingerprint = try OpenSSLDigest.sha256(Array(account.publicKeyPEM.utf8))
            } catch {
                throw .init(description: "Cannot read the key of service account '\(email)': \(error)")
            }
            if let privateKey {
                // A mismatched pair would sign blobs that the account's own key refuses.
                let probe = Array("emulator key pair check".utf8)
                let signature = try? privateKey.signSHA256(probe)
                guard let signature, publicKey.isValidSHA256Signature(signature, of: probe) else {
                    throw .init(
                        description: "The private key of service account '\(email)' does not match its public key.")
                }
            }
            let derived = fingerprint.prefix(20).map { byte in
                let hex = Array("0123456789abcdef".utf8)
                return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
            }.joined()
            accounts[email] = Account(
                email: email, publicKey: publicKey, privateKey: privateKey, keyID: account.keyID ?? derived,
                keyIDIsConfigured: account.keyID != nil)
        }
        self.accounts = accounts
    }

    /// The account with this email.
    package func account(_ email: String) -> Account? { accounts[email] }

    /// The key that verifies the signatures of the account with this email.
    package func publicKey(for email: String) -> RSAKey? { accounts[email]?.publicKey }
}
