extension Storage {
    /// Checks `name` against Google Cloud Storage's bucket-name rules, without
    /// contacting anything.
    ///
    /// The rules: 3 to 63 characters of lowercase letters, digits, `-`, `_`
    /// and `.`, starting and ending with a letter or digit; a name with dots
    /// may have up to 222 characters, each dot-separated part at most 63, and
    /// no part may be empty. ``Storage/init(bucket:endpoint:authorization:configuration:)``
    /// does not apply them, so emulators with looser names stay reachable; a
    /// tool that takes bucket names from people can call this first and refuse
    /// a typo before any request.
    ///
    /// ```swift
    /// try Storage.validateBucketName("my-app.appspot.com")  // fine
    /// try Storage.validateBucketName("My_Bucket")  // throws pathError
    /// ```
    ///
    /// - Parameter name: The bucket name, without `gs://`.
    /// - Throws: ``StorageErrorCode/pathError`` naming the rule that is broken.
    public static func validateBucketName(_ name: String) throws(StorageError) {
        let bytes = Array(name.utf8)
        let limit = bytes.contains(UInt8(ascii: ".")) ? 222 : 63
        guard (3...limit).contains(bytes.count) else {
            throw .pathError(
                "The bucket name \"\(name)\" has \(bytes.count) characters; bucket names have 3 to 63 "
                    + "(up to 222 with dots).")
        }
        func isLetterOrDigit(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        let allowed = bytes.allSatisfy {
            isLetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
        }
        guard allowed else {
            throw .pathError(
                "The bucket name \"\(name)\" is not valid: bucket names hold only lowercase letters, digits, "
                    + "-, _ and .")
        }
        guard let first = bytes.first, let last = bytes.last, isLetterOrDigit(first), isLetterOrDigit(last) else {
            throw .pathError("The bucket name \"\(name)\" must start and end with a lowercase letter or a digit.")
        }
        for part in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        where part.isEmpty || part.count > 63 {
            throw .pathError(
                "The bucket name \"\(name)\" has an empty part or one longer than 63 characters between dots.")
        }
    }
}

extension StorageReference {
    /// Checks `name` against the object-name rules, exactly as given, without
    /// contacting anything: the check every operation on
    /// ``Storage/reference(objectName:)`` makes before its first request.
    ///
    /// Nothing is normalized: `a//b`, `dir/` and `/lead` are legal names (of
    /// objects other than `a/b`, `dir` and `lead`). The rules are those of
    /// Google Cloud Storage: 1 to 1024 bytes of UTF-8, no carriage return or
    /// line feed, not `.` or `..`, and not under `.well-known/acme-challenge/`.
    ///
    /// ```swift
    /// try StorageReference.validateObjectName("images/stars.jpg")  // fine
    /// try StorageReference.validateObjectName("")  // throws: names no object
    /// ```
    ///
    /// - Parameter name: The object name, such as `images/stars.jpg`.
    /// - Throws: ``StorageErrorCode/pathError`` when a rule is broken (an
    ///   empty name among them).
    public static func validateObjectName(_ name: String) throws(StorageError) {
        _ = try StoragePath(exact: name).validatedObjectName()
    }
}
