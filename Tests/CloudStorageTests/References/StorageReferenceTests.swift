import Foundation
import Testing

@testable import CloudStorage

/// The examples of the Firebase "Create a reference" guide, plus normalization,
/// equality and description.
@Suite("StorageReference")
struct StorageReferenceTests {
    let storage = Storage(bucket: "my-bucket")

    // MARK: Create a reference

    @Test func rootReferenceHasEmptyPathAndName() {
        let storageRef = storage.reference()
        #expect(storageRef.fullPath == "")
        #expect(storageRef.name == "")
        #expect(storageRef.bucket == "my-bucket")
        #expect(storageRef.path.isRoot)
    }

    @Test func childReference() {
        let storageRef = storage.reference()
        let imagesRef = storageRef.child("images")
        #expect(imagesRef.fullPath == "images")
        #expect(imagesRef.name == "images")
    }

    @Test func multiSegmentChildEqualsChainedChildren() {
        let storageRef = storage.reference()
        let imagesRef = storageRef.child("images")
        let fileRef = storageRef.child("images/space.jpg")
        #expect(fileRef.fullPath == "images/space.jpg")
        #expect(fileRef == imagesRef.child("space.jpg"))
    }

    // MARK: Navigate with references

    @Test func parentOfFileIsItsFolder() throws {
        let spaceRef = storage.reference().child("images/space.jpg")
        let imagesRef = try #require(spaceRef.parent())
        #expect(imagesRef.fullPath == "images")
        #expect(imagesRef == storage.reference().child("images"))
    }

    @Test func rootOfAnyReferenceIsTheRoot() {
        let spaceRef = storage.reference().child("images/space.jpg")
        let rootRef = spaceRef.root()
        #expect(rootRef.fullPath == "")
        #expect(rootRef == storage.reference())
    }

    @Test func chainingParentAndChild() throws {
        let spaceRef = storage.reference().child("images/space.jpg")
        let earthRef = try #require(spaceRef.parent()?.child("earth.jpg"))
        #expect(earthRef.fullPath == "images/earth.jpg")
        #expect(earthRef.name == "earth.jpg")
    }

    @Test func parentOfRootIsNil() {
        let spaceRef = storage.reference().child("images/space.jpg")
        let nilRef = spaceRef.root().parent()
        #expect(nilRef == nil)
    }

    @Test func parentOfSingleSegmentIsRoot() throws {
        let imagesRef = storage.reference().child("images")
        let parent = try #require(imagesRef.parent())
        #expect(parent.path.isRoot)
        #expect(parent.parent() == nil)
    }

    // MARK: Reference properties

    @Test func referenceProperties() {
        let spaceRef = storage.reference().child("images/space.jpg")
        #expect(spaceRef.fullPath == "images/space.jpg")
        #expect(spaceRef.name == "space.jpg")
        #expect(spaceRef.bucket == "my-bucket")
    }

    @Test func referenceWithPath() {
        let spaceRef = storage.reference(withPath: "images/space.jpg")
        #expect(spaceRef.fullPath == "images/space.jpg")
        #expect(spaceRef == storage.reference().child("images").child("space.jpg"))
    }

    @Test func referenceFromGSURL() throws {
        let gsReference = try storage.reference(forURL: "gs://my-bucket/images/stars.jpg")
        #expect(gsReference.fullPath == "images/stars.jpg")
        #expect(gsReference.name == "stars.jpg")
        #expect(gsReference.bucket == "my-bucket")
    }

    @Test func referenceFromHTTPSURL() throws {
        let httpsReference = try storage.reference(
            forURL: "https://firebasestorage.googleapis.com/v0/b/my-bucket/o/images%2Fstars.jpg"
        )
        #expect(httpsReference.fullPath == "images/stars.jpg")
        #expect(httpsReference == storage.reference(withPath: "images/stars.jpg"))
    }

    // MARK: Upload example

    @Test func sameNameDifferentFullPath() {
        let storageRef = storage.reference()
        let riversRef = storageRef.child("images/rivers.jpg")
        #expect(riversRef.fullPath == "images/rivers.jpg")
        let mountainsRef = storageRef.child("mountains.jpg")
        let mountainImagesRef = storageRef.child("images/mountains.jpg")
        #expect(mountainsRef.name == mountainImagesRef.name)
        #expect(mountainsRef.fullPath != mountainImagesRef.fullPath)
        #expect(mountainsRef != mountainImagesRef)
    }

    // MARK: Normalization

    @Test(arguments: [
        ("/images//space.jpg/", "images/space.jpg"),
        ("///a///b///", "a/b"),
        ("a/b", "a/b"),
        ("/", ""),
        ("", ""),
        ("//", ""),
        ("./x", "./x"),
        (" spaced name .jpg", " spaced name .jpg"),
    ])
    func childNormalizesSlashes(raw: String, expected: String) {
        #expect(storage.reference().child(raw).fullPath == expected)
        #expect(StoragePath(normalizing: raw).string == expected)
    }

    @Test func emptyChildReturnsSameReference() {
        let imagesRef = storage.reference().child("images")
        #expect(imagesRef.child("") == imagesRef)
        #expect(imagesRef.child("/") == imagesRef)
        #expect(imagesRef.child("//").fullPath == "images")
    }

    @Test func childOfChildWithSlashes() {
        let ref = storage.reference().child("/a/").child("//b//c/")
        #expect(ref.fullPath == "a/b/c")
        #expect(ref.name == "c")
        #expect(ref.parent()?.fullPath == "a/b")
    }

    // MARK: Equality, hashing, description

    @Test func equalReferencesHashAlike() {
        let a = storage.reference(withPath: "images/space.jpg")
        let b = Storage(bucket: "my-bucket").reference().child("/images//space.jpg")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
    }

    @Test func differentBucketIsNotEqual() {
        let a = storage.reference(withPath: "images/space.jpg")
        let b = Storage(bucket: "other-bucket").reference(withPath: "images/space.jpg")
        #expect(a != b)
        #expect(Set([a, b]).count == 2)
    }

    @Test func differentEndpointIsNotEqual() throws {
        let emulatorURL = try #require(URL(string: "http://127.0.0.1:4443"))
        let a = storage.reference(withPath: "images/space.jpg")
        let b = Storage(bucket: "my-bucket", endpoint: .gcs(emulatorURL)).reference(withPath: "images/space.jpg")
        #expect(a != b)
    }

    @Test func differentPathIsNotEqual() {
        #expect(storage.reference(withPath: "a") != storage.reference(withPath: "b"))
        #expect(storage.reference(withPath: "a") != storage.reference())
    }

    @Test func descriptionIsGSURL() {
        #expect(storage.reference(withPath: "images/space.jpg").description == "gs://my-bucket/images/space.jpg")
        #expect(storage.reference().description == "gs://my-bucket/")
        #expect("\(storage.reference(withPath: "a"))" == "gs://my-bucket/a")
    }

    @Test(arguments: ["images/space.jpg", "", "a%20b/c", "weird #[]*? name", "é/🚀"])
    func descriptionParsesBack(path: String) throws {
        let ref = storage.reference(withPath: path)
        #expect(try storage.reference(forURL: ref.description) == ref)
    }

    @Test func referenceKeepsItsStorage() {
        let ref = storage.reference(withPath: "x")
        #expect(ref.storage.bucket == "my-bucket")
        #expect(ref.root().storage.bucket == "my-bucket")
        #expect(ref.parent()?.storage.endpoint == storage.endpoint)
    }
}
