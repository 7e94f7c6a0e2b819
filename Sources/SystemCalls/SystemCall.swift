#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file and process system calls of the SDK, the CLI and the emulator, in one place:
/// each retries on `EINTR` where that is correct and reports a failure as a
/// ``SystemCallError`` naming the call. (Sockets: ``POSIXSocket``.)
///
/// Everything here may block: call it only on threads of one's own (the SDK's
/// `BlockingIO` pool, a transport's or the emulator's I/O threads), never on
/// Swift's cooperative pool. Descriptors are plain `Int32`s; the caller owns them.
package enum SystemCall {
    // MARK: - Opening and closing

    /// How ``open(_:_:mode:)`` opens a file: exactly one access mode plus any of the options.
    package struct OpenFlags: OptionSet, Sendable {
        package var rawValue: Int32
        /// Makes flags from `open(2)`'s bits.
        package init(rawValue: Int32) { self.rawValue = rawValue }

        /// `O_RDONLY` (the absence of the other access modes).
        package static let readOnly = OpenFlags([])
        /// `O_WRONLY`.
        package static let writeOnly = OpenFlags(rawValue: O_WRONLY)
        /// `O_RDWR`.
        package static let readWrite = OpenFlags(rawValue: O_RDWR)
        /// `O_CREAT`: created with the mode given (less the umask) when missing.
        package static let create = OpenFlags(rawValue: O_CREAT)
        /// `O_EXCL`: with ``create``, fails with `EEXIST` when the path exists.
        package static let exclusive = OpenFlags(rawValue: O_EXCL)
        /// `O_TRUNC`.
        package static let truncate = OpenFlags(rawValue: O_TRUNC)
        /// `O_APPEND`.
        package static let append = OpenFlags(rawValue: O_APPEND)
        /// `O_CLOEXEC`: not inherited by child processes.
        package static let closeOnExec = OpenFlags(rawValue: O_CLOEXEC)
        /// `O_NOFOLLOW`: fails (`ELOOP`) when the last component is a symbolic link.
        package static let noFollow = OpenFlags(rawValue: O_NOFOLLOW)
        /// `O_NONBLOCK`: opening a FIFO does not wait for its other end.
        package static let nonBlocking = OpenFlags(rawValue: O_NONBLOCK)
        /// `O_DIRECTORY`: fails (`ENOTDIR`) unless the path is a directory.
        package static let directory = OpenFlags(rawValue: O_DIRECTORY)
    }

    /// `open(2)`, retried on `EINTR` (opening a FIFO or a device can be interrupted).
    ///
    /// - Returns: The new descriptor, which the caller must ``close(_:)``.
    package static func open(_ path: String, _ flags: OpenFlags, mode: UInt32 = 0o666) throws(SystemCallError) -> Int32
    {
        try retrying("open") { libcOpen(path, flags.rawValue, mode_t(mode)) }
    }

    /// `close(2)`, not retried: after `EINTR` the descriptor is closed already on Linux,
    /// and its number may belong to another file by now.
    ///
    /// - Throws: The error `close` reported (a write-back failure on some file systems).
    package static func close(_ fd: Int32) throws(SystemCallError) {
        guard libcClose(fd) == 0 else { throw SystemCallError("close", errno: errno) }
    }

    // MARK: - Reading and writing

    /// `read(2)` into `buffer`, retried on `EINTR`.
    ///
    /// - Returns: The bytes read; 0 at the end of the file.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        return try retrying("read") { libcRead(fd, base, buffer.count) }
    }

    /// `pread(2)` into `buffer` from the absolute `offset`, retried on `EINTR`; the file position stays.
    ///
    /// - Returns: The bytes read; fewer than asked only at the end of the file (or of a pipe's data).
    package static func read(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64
    ) throws(SystemCallError) -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        return try retrying("pread") { pread(fd, base, buffer.count, off_t(offset)) }
    }

    /// `write(2)` of `bytes`, retried on `EINTR`.
    ///
    /// - Returns: The bytes written, possibly fewer than given.
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemCallError) -> Int {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        return try retrying("write") { libcWrite(fd, base, bytes.count) }
    }

    /// `pwrite(2)` of `bytes` at the absolute `offset`, retried on `EINTR`; the file position stays.
    ///
    /// - Returns: The bytes written, possibly fewer than given.
    package static func write(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64
    ) throws(SystemCallError) -> Int {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        return try retrying("pwrite") { pwrite(fd, base, bytes.count, off_t(offset)) }
    }

    /// Writes every byte of `bytes`, at `offset` (`pwrite`) or at the file position (`write`, nil),
    /// resuming after partial writes.
    ///
    /// - Throws: The failed call's error; `EIO` when a write made no progress.
    package static func writeAll(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil
    ) throws(SystemCallError) {
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let count =
                if let offset { try write(fd, rest, at: offset + Int64(done)) } else { try write(fd, rest) }
            guard count > 0 else { throw SystemCallError(offset == nil ? "write" : "pwrite", errno: EIO) }
            done += count
        }
    }

    /// Allocates a buffer that file bytes are read into or written from, starting on a page
    /// boundary as the page cache's pages do, so that the kernel copies page-aligned.
    ///
    /// At the heap's usual 16-byte offset, `pread` from the page cache into the buffer ran into
    /// the CPU's 4 KiB aliasing (`rep movsb` on AMD EPYC) and took 0.5 CPU-s per GiB instead of
    /// 0.1 (2026-12-07). Deallocate it with `deallocate()`.
    ///
    /// - Parameter byteCount: The buffer's size.
    /// - Returns: The buffer, uninitialised.
    package static func allocateFileBuffer(byteCount: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: pageAlignment)
    }

    /// The alignment of ``allocateFileBuffer(byteCount:)``: a page on every system this runs on.
    package static let pageAlignment = 4096

    /// Copies `count` bytes of `source` from `sourceOffset` to `destination` at
    /// `destinationOffset` (`pread` and `pwrite` through one 1 MiB buffer); neither
    /// descriptor's file position moves.
    ///
    /// - Throws: The failing call's error; `pread` with `EIO` when `source` ends first.
    package static func copy(
        _ count: Int64, from source: Int32, at sourceOffset: Int64, to destination: Int32, at destinationOffset: Int64
    ) throws(SystemCallError) {
        let buffer = allocateFileBuffer(byteCount: Int(min(count, 1 << 20)))
        defer { buffer.deallocate() }
        var done: Int64 = 0
        while done < count {
            let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(Int64(buffer.count), count - done))])
            let read = try read(source, into: piece, at: sourceOffset + done)
            guard read > 0 else { throw SystemCallError("pread", errno: EIO) }
            try writeAll(destination, UnsafeRawBufferPointer(rebasing: piece[..<read]), at: destinationOffset + done)
            done += Int64(read)
        }
    }

    /// `lseek(2)` to `offset` from the current position (`SEEK_CUR`).
    ///
    /// - Returns: The new position.
    /// - Throws: `ESPIPE` for a pipe, socket or FIFO, which cannot seek.
    package static func seek(_ fd: Int32, by offset: Int64) throws(SystemCallError) -> Int64 {
        let position = lseek(fd, off_t(offset), SEEK_CUR)
        guard position >= 0 else { throw SystemCallError("lseek", errno: errno) }
        return Int64(position)
    }

    // MARK: - File state

    /// `ftruncate(2)` to `length` bytes, retried on `EINTR`.
    package static func truncate(_ fd: Int32, to length: Int64) throws(SystemCallError) {
        _ = try retrying("ftruncate") { Int(ftruncate(fd, off_t(length))) }
    }

    /// `fsync(2)`: the file's data and metadata are on stable storage, retried on `EINTR`.
    package static func sync(_ fd: Int32) throws(SystemCallError) {
        _ = try retrying("fsync") { Int(fsync(fd)) }
    }

    /// What `stat(2)` says about a file.
    package struct FileStatus: Hashable, Sendable {
        /// What kind of file it is.
        package enum Kind: Sendable {
            /// `S_IFREG`.
            case regular
            /// `S_IFDIR`.
            case directory
            /// `S_IFLNK` (only from `lstat`).
            case symbolicLink
            /// `S_IFIFO`: a named pipe.
            case fifo
            /// `S_IFSOCK`.
            case socket
            /// `S_IFCHR`.
            case characterDevice
            /// `S_IFBLK`.
            case blockDevice
            /// A type bit pattern none of the above.
            case unknown
        }

        /// The file type (`st_mode & S_IFMT`).
        package var kind: Kind
        /// The permission bits (`st_mode & 0o7777`).
        package var permissions: UInt32
        /// The owner's user ID.
        package var owner: UInt32
        /// The device the file lives on (`st_dev`).
        package var device: UInt64
        /// `st_ino`: with ``device``, which file this is, whatever its name.
        package var inode: UInt64
        /// The size in bytes (`st_size`).
        package var size: Int64
        /// The last modification time, whole seconds since 1970.
        package var modificationSeconds: Int64
        /// The last modification time's nanoseconds.
        package var modificationNanoseconds: Int64
    }

    /// `fstat(2)`.
    package static func status(_ fd: Int32) throws(SystemCallError) -> FileStatus {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SystemCallError("fstat", errno: errno) }
        return FileStatus(info)
    }

    /// `stat(2)`, or `lstat(2)` when `followingLinks` is false (a symbolic link is then described itself).
    package static func status(path: String, followingLinks: Bool = true) throws(SystemCallError) -> FileStatus {
        var info = stat()
        if followingLinks {
            guard stat(path, &info) == 0 else { throw SystemCallError("stat", errno: errno) }
        } else {
            guard lstat(path, &info) == 0 else { throw SystemCallError("lstat", errno: errno) }
        }
        return FileStatus(info)
    }

    /// What ``isAccessible(_:_:)`` asks about a path.
    package struct Access: OptionSet, Sendable {
        package var rawValue: Int32
        /// Makes an access set from `access(2)`'s bits.
        package init(rawValue: Int32) { self.rawValue = rawValue }
        /// `F_OK`: the path exists.
        package static let exists = Access([])
        /// `W_OK`.
        package static let write = Access(rawValue: W_OK)
        /// `X_OK` (for a directory: may be searched).
        package static let execute = Access(rawValue: X_OK)
    }

    /// `access(2)`: whether this process may use `path` as asked (with its real user).
    ///
    /// - Throws: Why not (`ENOENT`, `EACCES`, …).
    package static func checkAccess(_ path: String, _ mode: Access) throws(SystemCallError) {
        guard access(path, mode.rawValue == 0 ? F_OK : mode.rawValue) == 0 else {
            throw SystemCallError("access", errno: errno)
        }
    }

    // MARK: - Names

    /// `rename(2)`: atomically replaces `destination` (on the same file system).
    package static func rename(_ source: String, to destination: String) throws(SystemCallError) {
        guard libcRename(source, destination) == 0 else { throw SystemCallError("rename", errno: errno) }
    }

    /// `link(2)`: a second name for `source`; fails with `EEXIST` when `destination` exists.
    package static func link(_ source: String, to destination: String) throws(SystemCallError) {
        guard libcLink(source, destination) == 0 else { throw SystemCallError("link", errno: errno) }
    }

    /// `unlink(2)`.
    package static func unlink(_ path: String) throws(SystemCallError) {
        guard libcUnlink(path) == 0 else { throw SystemCallError("unlink", errno: errno) }
    }

    /// `unlink(2)` where a failure changes nothing for the caller (cleaning up a temporary file).
    package static func removeIfPresent(_ path: String) {
        _ = libcUnlink(path)
    }

    /// `mkdir(2)` with `mode` (less the umask).
    package static func makeDirectory(_ path: String, mode: UInt32) throws(SystemCallError) {
        guard mkdir(path, mode_t(mode)) == 0 else { throw SystemCallError("mkdir", errno: errno) }
    }

    /// `chmod(2)`.
    package static func setPermissions(_ path: String, _ mode: UInt32) throws(SystemCallError) {
        guard chmod(path, mode_t(mode)) == 0 else { throw SystemCallError("chmod", errno: errno) }
    }

    /// The process's umask, read without changing it for good (`umask(2)` can only swap).
    package static func currentUmask() -> UInt32 {
        let mask = umask(0o022)
        umask(mask)
        return UInt32(mask)
    }

    // MARK: - Retrying

    /// Runs `call` again while it fails with `EINTR`.
    ///
    /// - Returns: Its non-negative result.
    /// - Throws: Any other failure as a ``SystemCallError`` named `name`.
    private static func retrying<Result: BinaryInteger>(
        _ name: String, _ call: () -> Result
    ) throws(SystemCallError) -> Result {
        while true {
            let result = call()
            if result >= 0 { return result }
            let code = errno
            if code != EINTR { throw SystemCallError(name, errno: code) }
        }
    }
}

extension SystemCall.FileStatus {
    init(_ info: stat) {
        kind =
            switch info.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            case S_IFLNK: .symbolicLink
            case S_IFIFO: .fifo
            case S_IFSOCK: .socket
            case S_IFCHR: .characterDevice
            case S_IFBLK: .blockDevice
            default: .unknown
            }
        permissions = UInt32(info.st_mode & 0o7777)
        owner = UInt32(info.st_uid)
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Darwin)
        modificationSeconds = Int64(info.st_mtimespec.tv_sec)
        modificationNanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #else
        modificationSeconds = Int64(info.st_mtim.tv_sec)
        modificationNanoseconds = Int64(info.st_mtim.tv_nsec)
        #endif
    }
}

/// The `errno` values callers tell apart, so that they need not import the C library themselves.
package enum Errno {
    /// `ENOENT`: no such file or directory.
    package static let noSuchFile = ENOENT
    /// `EEXIST`.
    package static let exists = EEXIST
    /// `ENOTDIR`: a component of the path is not a directory.
    package static let notDirectory = ENOTDIR
    /// `EINTR`.
    package static let interrupted = EINTR
    /// `EAGAIN` (the same as `EWOULDBLOCK` on the platforms we build for).
    package static let wouldBlock = EAGAIN
    /// `EPIPE`: the reader of a pipe or socket is gone.
    package static let brokenPipe = EPIPE
    /// `EBADF`.
    package static let badDescriptor = EBADF
    /// `EIO`.
    package static let inputOutput = EIO
    /// `EINVAL`.
    package static let invalidArgument = EINVAL
    /// `ETIMEDOUT`: a connection attempt or a wait ran out of time.
    package static let timedOut = ETIMEDOUT
    /// `ECONNREFUSED`: nothing listens at the address.
    package static let connectionRefused = ECONNREFUSED
    /// `ELOOP`: what opening a symbolic link with `O_NOFOLLOW` fails with.
    package static let symbolicLink = ELOOP

    /// The system's words for `code` (`strerror`).
    package static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// The process's signals and standard streams, as the CLI and the I/O threads handle them.
package enum ProcessSignal {
    /// `SIGINT` (Ctrl-C).
    package static let interrupt = SIGINT
    /// `SIGTERM`.
    package static let terminate = SIGTERM
    /// `SIGPIPE`: a write to a pipe or socket whose reader is gone.
    package static let brokenPipe = SIGPIPE

    /// Blocks `number` on the calling thread (`pthread_sigmask`), e.g. `SIGPIPE` on a thread
    /// that writes with calls that cannot suppress it per call (`sendfile`, `write`).
    package static func blockOnCurrentThread(_ number: Int32) {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, number)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Whether `number`'s disposition is `SIG_IGN` now; asked without changing it.
    package static func isIgnored(_ number: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(number, nil, &current) == 0 else { return false }
        #if canImport(Darwin)
        let handler = current.__sigaction_u.__sa_handler
        #else
        let handler = current.__sigaction_handler.sa_handler
        #endif
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }

    /// Sets `number`'s disposition to `SIG_IGN` (so that a dispatch signal source alone sees it).
    ///
    /// - Returns: What puts the earlier disposition back.
    package static func ignore(_ number: Int32) -> () -> Void {
        let earlier = signal(number, SIG_IGN)
        return { _ = signal(number, earlier) }
    }
}

/// The standard descriptors, and whether one is a terminal.
package enum StandardStream {
    /// `STDIN_FILENO`.
    package static let input = STDIN_FILENO
    /// `STDOUT_FILENO`.
    package static let output = STDOUT_FILENO
    /// `STDERR_FILENO`.
    package static let error = STDERR_FILENO

    /// Whether `fd` is a terminal (`isatty`).
    package static func isTerminal(_ fd: Int32) -> Bool {
        isatty(fd) == 1
    }
}

extension SystemCall {
    /// Waits, without a time limit, until `fd` takes bytes again (`poll` for `POLLOUT`):
    /// for a descriptor someone else left non-blocking.
    package static func waitWritable(_ fd: Int32) {
        var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&ready, 1, -1)
    }

    /// The process's effective user ID (`geteuid`).
    package static func effectiveUserID() -> UInt32 {
        UInt32(geteuid())
    }

    /// The processor time all of the process's threads have used so far, user and system
    /// (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`); zero where the clock cannot be read.
    package static func processCPUTime() -> Duration {
        var time = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time) == 0 else { return .zero }
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }
}

extension SystemCall {
    // MARK: - Names inside an open directory

    /// `openat(2)`: `name` inside the directory open as `directory`, retried on `EINTR`. With
    /// ``OpenFlags/noFollow`` a symbolic link at `name` is refused (`ELOOP`), so a path walked
    /// one name at a time from a directory never leaves it through a link.
    ///
    /// - Returns: The new descriptor, which the caller must ``close(_:)``.
    package static func open(
        _ name: String, in directory: Int32, _ flags: OpenFlags, mode: UInt32 = 0o666
    ) throws(SystemCallError) -> Int32 {
        try retrying("openat") { openat(directory, name, flags.rawValue, mode_t(mode)) }
    }

    /// `mkdirat(2)`: the directory `name` inside `directory`, with `mode` (less the umask).
    package static func makeDirectory(_ name: String, in directory: Int32, mode: UInt32) throws(SystemCallError) {
        guard mkdirat(directory, name, mode_t(mode)) == 0 else { throw SystemCallError("mkdirat", errno: errno) }
    }

    /// `renameat(2)` within one directory: atomically replaces `destination` (a symbolic link
    /// there is replaced, not followed).
    package static func rename(_ source: String, to destination: String, in directory: Int32) throws(SystemCallError) {
        guard renameat(directory, source, directory, destination) == 0 else {
            throw SystemCallError("renameat", errno: errno)
        }
    }

    /// `unlinkat(2)` of `name` inside `directory`.
    package static func unlink(_ name: String, in directory: Int32) throws(SystemCallError) {
        guard unlinkat(directory, name, 0) == 0 else { throw SystemCallError("unlinkat", errno: errno) }
    }

    /// `fstatat(2)` of `name` inside `directory`, not following a symbolic link there
    /// (`AT_SYMLINK_NOFOLLOW`: a link is described itself).
    package static func status(_ name: String, in directory: Int32) throws(SystemCallError) -> FileStatus {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw SystemCallError("fstatat", errno: errno)
        }
        return FileStatus(info)
    }

    /// `fchmod(2)`: the permission bits of the open file `fd`.
    package static func setPermissions(_ fd: Int32, _ mode: UInt32) throws(SystemCallError) {
        guard fchmod(fd, mode_t(mode)) == 0 else { throw SystemCallError("fchmod", errno: errno) }
    }

    /// `flock(2)` with `LOCK_EX`: an advisory lock on the open file, held until every descriptor
    /// of this open (this process's, or a child's that inherited it) is closed, or the process
    /// dies, however it dies. Two opens of one file exclude each other, even in one process.
    ///
    /// - Parameter waiting: Whether to wait while another open holds it (`EINTR` retried), or
    ///   to return at once.
    /// - Returns: Whether the lock is now held: false only when not `waiting` and another open holds it.
    package static func lockExclusively(_ fd: Int32, waiting: Bool) throws(SystemCallError) -> Bool {
        while flock(fd, LOCK_EX | (waiting ? 0 : LOCK_NB)) != 0 {
            let code = errno
            if code == EWOULDBLOCK && !waiting { return false }
            if code != EINTR { throw SystemCallError("flock", errno: code) }
        }
        return true
    }
}

// The C functions whose names ``SystemCall``'s own methods hide inside it.
private func libcOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func libcClose(_ fd: Int32) -> Int32 { close(fd) }
private func libcRead(_ fd: Int32, _ base: UnsafeMutableRawPointer, _ count: Int) -> Int { read(fd, base, count) }
private func libcWrite(_ fd: Int32, _ base: UnsafeRawPointer, _ count: Int) -> Int { write(fd, base, count) }
private func libcRename(_ source: String, _ destination: String) -> Int32 { rename(source, destination) }
private func libcLink(_ source: String, _ destination: String) -> Int32 { link(source, destination) }
private func libcUnlink(_ path: String) -> Int32 { unlink(path) }
