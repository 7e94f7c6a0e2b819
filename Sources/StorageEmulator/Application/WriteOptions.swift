import Foundation
import HTTP1

/// The customer-supplied encryption key (CSEK) a request carries, checked as Cloud Storage checks
/// it: `x-goog-encryption-algorithm` must be `AES256`, `x-goog-encryption-key` base64 of 32 bytes,
/// and `x-goog-encryption-key-sha256` base64 of the key's SHA-256 (with `copySource`, the
/// `x-goog-copy-source-encryption-*` headers of a copy's source). Only the digest is kept.
enum CustomerKey {
    /// The validated digest of the request's key; nil when the request carries none.
    ///
    /// - Throws: 400 `customerEncryptionAlgorithmIsInvalid`, `customerEncryptionKeyFormatIsInvalid`
    ///   or `customerEncryptionKeySha256IsInvalid`, as Cloud Storage answers.
    static func sha256(_ request: any ServerRequest, copySource: Bool = false) throws -> String? {
        let prefix = copySource ? "x-goog-copy-source-encryption-" : "x-goog-encryption-"
        let algorithm = request.headers[prefix + "algorithm"]
        let key = request.headers[prefix + "key"]
        let digest = request.headers[prefix + "key-sha256"]
        if algorithm == nil, key == nil, digest == nil { return nil }
        guard algorithm == "AES256" else {
            throw HTTPError(
                400, "Missing an encryption algorithm, or the provided algorithm is not \"AES256\".",
                reason: "customerEncryptionAlgorithmIsInvalid")
        }
        guard let key, let bytes = Data(base64Encoded: key), bytes.count == 32 else {
            throw HTTPError(
                400,
                "Missing an encryption key, or it is not Base64 encoded, or it does not meet the required length of the encryption algorithm.",
                reason: "customerEncryptionKeyFormatIsInvalid")
        }
        var hash = SHA256Stream()
        bytes.withUnsafeBytes { hash.update($0) }
        let actual = Data(hash.digest())
        guard let digest, let sent = Data(base64Encoded: digest), sent == actual else {
            throw HTTPError(
                400,
                "Missing a SHA256 hash of the encryption key, or it is not Base64 encoded, or it does not match the encryption key.",
                reason: "customerEncryptionKeySha256IsInvalid")
        }
        return actual.base64EncodedString()
    }

    /// Checks the key a request gave (its digest, nil for none) against the one an object is
    /// encrypted with (nil for none).
    ///
    /// - Throws: 400 `resourceIsEncryptedWithCustomerEncryptionKey` without a key,
    ///   `customerEncryptionKeyIsIncorrect` with another, `resourceNotEncryptedWithCustomerEncryptionKey`
    ///   with one for an object that has none.
    static func check(given: String?, stored: String?) throws {
        switch (given, stored) {
        case (nil, nil): return
        case (nil, _?):
            throw HTTPError(
                400, "The target object is encrypted by a customer-supplied encryption key.",
                reason: "resourceIsEncryptedWithCustomerEncryptionKey")
        case (_?, nil):
            throw HTTPError(
                400, "The target object is not encrypted by a customer-supplied encryption key.",
                reason: "resourceNotEncryptedWithCustomerEncryptionKey")
        case (let given?, let stored?):
            guard given == stored else {
                throw HTTPError(
                    400, "The provided encryption key is incorrect.", reason: "customerEncryptionKeyIsIncorrect")
            }
        }
    }
}

/// What a JSON API request that creates an object says of it beyond its metadata: the
/// customer-supplied key, the KMS key (`kmsKeyName`, or `destinationKmsKeyName` for a rewrite's
/// destination) and the predefined ACL (`predefinedAcl`, or `destinationPredefinedAcl` for
/// copies and composes), checked as Cloud Storage checks them.
struct WriteOptions {
    /// The object ACLs Cloud Storage predefines.
    static let predefinedACLs: Set<String> = [
        "authenticatedRead", "bucketOwnerFullControl", "bucketOwnerRead", "private", "projectPrivate", "publicRead",
    ]
    /// The storage classes Cloud Storage knows.
    static let storageClasses: Set<String> = [
        "STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE", "MULTI_REGIONAL", "REGIONAL", "DURABLE_REDUCED_AVAILABILITY",
    ]

    var customerKeySHA256: String?
    var kmsKeyName: String?

    /// - Parameters:
    ///   - request: The request.
    ///   - destination: Whether the request names its new object's options with `destination`
    ///     (a copy or rewrite) rather than plainly (an upload or a compose).
    /// - Throws: 400 for a malformed key, an unknown predefined ACL, or both a customer-supplied
    ///   and a KMS key.
    init(_ request: any ServerRequest, destination: Bool) throws {
        customerKeySHA256 = try CustomerKey.sha256(request)
        kmsKeyName = request.query(destination ? "destinationKmsKeyName" : "kmsKeyName")
        let aclParameter =
            destination || request.path.hasSuffix("/compose") ? "destinationPredefinedAcl" : "predefinedAcl"
        if let acl = request.query(aclParameter), !Self.predefinedACLs.contains(acl) {
            throw HTTPError(
                400, "Invalid argument: \(aclParameter) '\(acl)' is not a predefined ACL.", reason: "invalid")
        }
    }

    /// Sets the new object's keys: the request's customer-supplied key (or none), and its KMS key
    /// or else the one the object resource named.
    ///
    /// - Throws: 400 for both a customer-supplied and a KMS key, or an unknown storage class.
    func apply(to attributes: inout ObjectAttributes) throws {
        attributes.customerKeySHA256 = customerKeySHA256
        attributes.kmsKeyName = kmsKeyName ?? attributes.kmsKeyName
        if attributes.customerKeySHA256 != nil, attributes.kmsKeyName != nil {
            throw HTTPError(
                400, "A customer-supplied encryption key and a Cloud KMS key cannot both be specified.",
                reason: "invalid")
        }
        try Self.checkStorageClass(attributes.storageClass)
    }

    /// - Throws: 400 for a storage class Cloud Storage does not have.
    static func checkStorageClass(_ storageClass: String?) throws {
        if let storageClass, !storageClasses.contains(storageClass.uppercased()) {
            throw HTTPError(400, "Invalid argument: storage class '\(storageClass)'.", reason: "invalid")
        }
    }
}
