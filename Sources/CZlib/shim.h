// The system's zlib (Debian: zlib1g-dev), used for its CRC-32 (crc32_z, crc32_combine).
#include <zlib.h>
