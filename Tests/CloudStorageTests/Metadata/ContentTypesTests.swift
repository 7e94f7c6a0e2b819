import Testing

@testable import CloudStorage

/// The built-in extension-to-media-type table.
@Suite("ContentTypes")
struct ContentTypesTests {
    @Test(arguments: [
        // One or more per family.
        ("jpg", "image/jpeg"), ("jpeg", "image/jpeg"), ("png", "image/png"), ("svg", "image/svg+xml"),
        ("heic", "image/heic"), ("tif", "image/tiff"),
        ("mp4", "video/mp4"), ("mov", "video/quicktime"), ("webm", "video/webm"), ("3gp", "video/3gpp"),
        ("mp3", "audio/mpeg"), ("m4a", "audio/mp4"), ("flac", "audio/flac"), ("midi", "audio/midi"),
        ("txt", "text/plain"), ("html", "text/html"), ("htm", "text/html"), ("csv", "text/csv"),
        ("json", "application/json"), ("js", "text/javascript"), ("yml", "application/yaml"),
        ("pdf", "application/pdf"),
        ("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ("epub", "application/epub+zip"),
        ("zip", "application/zip"), ("gz", "application/gzip"), ("tgz", "application/gzip"),
        ("7z", "application/x-7z-compressed"), ("zst", "application/zstd"),
        ("ttf", "font/ttf"), ("woff2", "font/woff2"),
        ("wasm", "application/wasm"),
    ])
    func familySamples(ext: String, type: String) {
        #expect(ContentTypes.forPathExtension(ext) == type)
        #expect(ContentTypes.forPath("dir/file.\(ext)") == type)
    }

    @Test func everyRequiredExtensionHasABareType() {
        let extensions = """
            jpg jpeg png gif webp heic heif avif svg bmp tiff tif ico
            mp4 m4v mov webm mkv avi mpeg mpg 3gp
            mp3 m4a aac wav ogg oga opus flac mid midi
            txt html htm css csv tsv md xml js mjs json yaml yml ics vtt
            pdf rtf doc docx xls xlsx ppt pptx odt ods odp epub
            zip gz tgz tar bz2 xz 7z rar zst
            ttf otf woff woff2 wasm
            """.split(whereSeparator: { $0 == " " || $0 == "\n" })
        #expect(extensions.count == 73)
        for ext in extensions {
            let type = ContentTypes.forPathExtension(String(ext))
            #expect(type != nil, "no type for \(ext)")
            #expect(type?.contains(";") == false, "\(ext) has parameters")
            #expect(type?.split(separator: "/").count == 2, "\(ext) is not type/subtype")
        }
    }

    @Test func octetStreamIsNotInTheTable() {
        #expect(ContentTypes.forPathExtension("bin") == nil)
        #expect(ContentTypes.forPathExtension("unknownext") == nil)
        #expect(ContentTypes.forPath("firmware.bin") == nil)
    }

    @Test(arguments: ["JPG", "Jpg", "jPeG"])
    func caseInsensitive(ext: String) {
        #expect(ContentTypes.forPathExtension(ext) == "image/jpeg")
        #expect(ContentTypes.forPath("IMAGES/PHOTO.\(ext)") == "image/jpeg")
    }

    @Test func multiDotNamesUseTheLastExtension() {
        #expect(ContentTypes.forPath("archive.tar.gz") == "application/gzip")
        #expect(ContentTypes.forPath("backups/2024.01.02.tar") == "application/x-tar")
        #expect(ContentTypes.forPath("my.photos/cover.final.PNG") == "image/png")
        #expect(ContentTypes.forPath(".config.json") == "application/json")
    }

    @Test(arguments: ["README", "images/README", ".bashrc", "dir/.gitignore", "file.", "dir.jpg/noext", "", "/"])
    func noExtension(path: String) {
        #expect(ContentTypes.forPath(path) == nil)
    }

    @Test func trailingSlashIsNotPartOfTheName() {
        #expect(ContentTypes.forPath("a.jpg/") == "image/jpeg")
    }
}
