#include "recorder/modules.h"

#include <dlfcn.h>
#include <elf.h>
#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/bbox_ring.h"

namespace ncclrec::recorder {
namespace {

class Bbox {
 public:
  explicit Bbox(uint32_t module_capacity) {
    const auto g = format::computeGeometry(1, 0, 0, 1, module_capacity);
    memory_ = static_cast<uint8_t*>(std::aligned_alloc(4096, g.file_bytes));
    std::memset(memory_, 0, g.file_bytes);
    format::initHeader(header(), 1, 0, 0, 1, module_capacity);
  }
  ~Bbox() { std::free(memory_); }
  format::BboxHeader* header() { return reinterpret_cast<format::BboxHeader*>(memory_); }
  format::ModuleRecord& record(uint32_t i) { return format::moduleRecords(header())[i]; }

 private:
  uint8_t* memory_;
};

// The build id as `readelf -n` finds it: the .note.gnu.build-id section of the file on disk,
// located through the section headers (the recorder reads program headers in memory instead).
std::string buildIdFromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(Elf64_Ehdr)) return "";
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, bytes.data(), sizeof(ehdr));
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != ELFCLASS64) {
    return "";
  }
  std::vector<Elf64_Shdr> sections(ehdr.e_shnum);
  if (ehdr.e_shoff + sizeof(Elf64_Shdr) * ehdr.e_shnum > bytes.size()) return "";
  std::memcpy(sections.data(), bytes.data() + ehdr.e_shoff, sizeof(Elf64_Shdr) * ehdr.e_shnum);
  const Elf64_Shdr& names = sections.at(ehdr.e_shstrndx);
  for (const Elf64_Shdr& section : sections) {
    const char* name = bytes.data() + names.sh_offset + section.sh_name;
    if (section.sh_type != SHT_NOTE || std::strcmp(name, ".note.gnu.build-id") != 0) continue;
    Elf64_Nhdr note;
    std::memcpy(&note, bytes.data() + section.sh_offset, sizeof(note));
    const size_t desc = section.sh_offset + sizeof(note) + ((note.n_namesz + 3) & ~3u);
    return bytes.substr(desc, note.n_descsz);
  }
  return "";
}

std::string buildIdOf(const format::ModuleRecord& record) {
  return std::string(reinterpret_cast<const char*>(record.build_id), record.build_id_len);
}

std::string selfExe() {
  char path[4096];
  const ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return len > 0 ? std::string(path, len) : "";
}

// The record whose path ends in `/name`, or null.
const format::ModuleRecord* findByBasename(Bbox& bbox, const std::string& name) {
  for (uint32_t i = 0; i < bbox.header()->module_count; ++i) {
    const std::string path = bbox.record(i).path;
    if (path.size() >= name.size() + 1 &&
        path.compare(path.size() - name.size() - 1, std::string::npos, "/" + name) == 0) {
      return &bbox.record(i);
    }
  }
  return nullptr;
}

TEST(ModuleMap, MainProgramFirstWithItsBuildId) {
  Bbox bbox(256);
  const int n = writeModuleMap(bbox.header());
  ASSERT_GT(n, 2);
  EXPECT_EQ(bbox.header()->module_count, static_cast<uint32_t>(n));
  const format::ModuleRecord& exe = bbox.record(0);
  EXPECT_EQ(exe.valid, format::kValidMark);
  EXPECT_EQ(std::string(exe.path), selfExe());
  const std::string expected = buildIdFromFile(selfExe());
  ASSERT_FALSE(expected.empty()) << "the test binary has no build id";
  EXPECT_EQ(buildIdOf(exe), expected);
  // The code of this test lies inside the main program's extent.
  const auto here = reinterpret_cast<uint64_t>(&buildIdFromFile);
  EXPECT_GE(here, exe.base);
  EXPECT_LT(here - exe.base, exe.size);
}

TEST(ModuleMap, LibcWithBuildIdAndLoadBias) {
  Bbox bbox(256);
  ASSERT_GT(writeModuleMap(bbox.header()), 0);
  const format::ModuleRecord* libc = findByBasename(bbox, "libc.so.6");
  ASSERT_NE(libc, nullptr);
  EXPECT_EQ(libc->valid, format::kValidMark);
  const std::string expected = buildIdFromFile(libc->path);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(buildIdOf(*libc), expected);

  // A function only libc defines (sanitizers interpose printf and friends).
  const auto in_libc = reinterpret_cast<uint64_t>(&gnu_get_libc_version);
  Dl_info info{};
  link_map* map = nullptr;
  ASSERT_NE(dladdr1(reinterpret_cast<void*>(in_libc), &info, reinterpret_cast<void**>(&map),
                    RTLD_DL_LINKMAP),
            0);
  EXPECT_EQ(libc->base, map->l_addr);
  EXPECT_LT(in_libc - libc->base, libc->size);
}

TEST(ModuleMap, RewriteKeepsRecordsAndAddsDlopenedObjects) {
  Bbox bbox(256);
  const int before = writeModuleMap(bbox.header());
  ASSERT_GT(before, 0);
  const format::ModuleRecord first_copy = bbox.record(0);
  EXPECT_EQ(writeModuleMap(bbox.header()), before);
  EXPECT_EQ(std::memcmp(&first_copy, &bbox.record(0), sizeof(first_copy)), 0);

  const char* candidates[] = {"libunwind.so.8", "libz.so.1", "liblzma.so.5", "libdw.so.1"};
  const char* opened = nullptr;
  for (const char* name : candidates) {
    if (dlopen(name, RTLD_NOW | RTLD_NOLOAD) != nullptr) continue;  // already loaded
    if (dlopen(name, RTLD_NOW | RTLD_LOCAL) != nullptr) {
      opened = name;
      break;
    }
  }
  if (opened == nullptr) GTEST_SKIP() << "no library to dlopen";
  const int after = writeModuleMap(bbox.header());
  EXPECT_GT(after, before);
  const format::ModuleRecord* added = findByBasename(bbox, opened);
  ASSERT_NE(added, nullptr) << opened;
  EXPECT_EQ(buildIdOf(*added), buildIdFromFile(added->path));
}

TEST(ModuleMap, StaleRecordsAreUnpublished) {
  Bbox bbox(256);
  for (uint32_t i = 0; i < 256; ++i) {
    bbox.record(i).valid = format::kValidMark;
    std::strcpy(bbox.record(i).path, "/stale");
  }
  bbox.header()->module_count = 256;
  const int n = writeModuleMap(bbox.header());
  ASSERT_GT(n, 0);
  ASSERT_LT(n, 256);
  EXPECT_EQ(bbox.header()->module_count, static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_STRNE(bbox.record(i).path, "/stale") << i;
  for (int i = n; i < 256; ++i) EXPECT_EQ(bbox.record(i).valid, 0u) << i;
}

TEST(ModuleMap, StopsAtCapacity) {
  Bbox bbox(2);
  EXPECT_EQ(writeModuleMap(bbox.header()), 2);
  EXPECT_EQ(bbox.header()->module_count, 2u);
  EXPECT_EQ(std::string(bbox.record(0).path), selfExe());
  EXPECT_EQ(bbox.record(1).valid, format::kValidMark);

  Bbox empty(0);
  EXPECT_EQ(writeModuleMap(empty.header()), 0);
  EXPECT_EQ(writeModuleMap(nullptr), -1);
}

}  // namespace
}  // namespace ncclrec::recorder
