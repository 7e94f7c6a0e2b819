extension Storage {
    /// The signer the Storage's own authorization provides, for ``StorageReference/signedURL(method:expiresIn:headers:queryParameters:style:signer:)``
    /// called without one.
    ///
    /// The seam where credentials that can sign (a service account's key, the metadata
    /// server's account through IAM) will plug in; until then no authorization can.
    func defaultURLSigner() throws(StorageError) -> SignedURLSigner {
        throw .invalidArgument("This authorization cannot sign URLs; pass a signer.")
    }
}
