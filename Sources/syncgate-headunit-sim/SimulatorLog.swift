import Foundation

/// The simulator's journal: one line per event on stderr (unbuffered), which tests read from its log file.
enum SimulatorLog {
    static func line(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
