// cloud-storage: upload files to Google Cloud Storage, Cloud Storage for
// Firebase or the built-in emulator, and run that emulator.

import CloudStorageCLI
import Foundation

exit(await runCommandLine(Array(CommandLine.arguments.dropFirst())).rawValue)
