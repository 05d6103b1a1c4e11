#include "recorder/real_dl.h"

#include <elf.h>
#include <link.h>

#include <cstdint>

// Compiled with -fno-sanitize=all (recorder/CMakeLists.txt), and nothing here may call a function
// a sanitizer intercepts (strcmp, strlen, dl_iterate_phdr...): the first caller can be a
// sanitizer runtime looking up its interceptors' targets before it has any. No function-local
// statics (their guards are intercepted too), and no std::atomic: in a -O0 build its members are
// out-of-line functions the linker may take from an instrumented file; the __atomic builtins are
// always inline.
namespace ncclrec::recorder {
namespace {

bool sameString(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

bool startsWith(const char* s, const char* prefix) {
  for (; *prefix != '\0'; ++s, ++prefix) {
    if (*s != *prefix) return false;
  }
  return true;
}

const char* baseName(const char* path) {
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p) {
    if (*p == '/') base = p + 1;
  }
  return base;
}

uint32_t gnuHash(const char* name) {
  uint32_t h = 5381;
  for (; *name != '\0'; ++name) h = h * 33 + static_cast<unsigned char>(*name);
  return h;
}

uint32_t sysvHash(const char* name) {
  uint32_t h = 0;
  for (; *name != '\0'; ++name) {
    h = (h << 4) + static_cast<unsigned char>(*name);
    const uint32_t high = h & 0xf0000000u;
    if (high != 0) h ^= high >> 24;
    h &= ~high;
  }
  return h;
}

struct DynamicTables {
  const ElfW(Sym) * symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  const ElfW(Versym) * versym = nullptr;
};

// The dynamic linker rewrites these entries to addresses where the dynamic section is writable
// (x86_64, aarch64) and leaves offsets from the load address where it is not (RISC-V, MIPS). A
// shared library's offsets are below its load address.
const void* address(const link_map* map, ElfW(Addr) value) {
  return reinterpret_cast<const void*>(value < map->l_addr ? value + map->l_addr : value);
}

DynamicTables tablesOf(const link_map* map) {
  DynamicTables t;
  for (const ElfW(Dyn)* d = map->l_ld; d != nullptr && d->d_tag != DT_NULL; ++d) {
    const void* p = address(map, d->d_un.d_ptr);
    switch (d->d_tag) {
      case DT_SYMTAB:
        t.symtab = static_cast<const ElfW(Sym)*>(p);
        break;
      case DT_STRTAB:
        t.strtab = static_cast<const char*>(p);
        break;
      case DT_GNU_HASH:
        t.gnu_hash = static_cast<const uint32_t*>(p);
        break;
      case DT_HASH:
        t.sysv_hash = static_cast<const uint32_t*>(p);
        break;
      case DT_VERSYM:
        t.versym = static_cast<const ElfW(Versym)*>(p);
        break;
      default:
        break;
    }
  }
  return t;
}

// The symbol `index` if it is the function `name`; a default version (dlsym@@GLIBC_2.34) beats
// a hidden one (dlsym@GLIBC_2.2.5).
void consider(const DynamicTables& t, uint32_t index, const char* name, const ElfW(Sym) * *best,
              bool* best_is_default) {
  const ElfW(Sym)* s = &t.symtab[index];  // ELF32_ST_TYPE is the same macro
  if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC) return;
  if (!sameString(t.strtab + s->st_name, name)) return;
  const bool is_default = t.versym == nullptr || (t.versym[index] & 0x8000) == 0;
  if (*best == nullptr || (is_default && !*best_is_default)) {
    *best = s;
    *best_is_default = is_default;
  }
}

const ElfW(Sym) * findSymbol(const DynamicTables& t, const char* name) {
  if (t.symtab == nullptr || t.strtab == nullptr) return nullptr;
  const ElfW(Sym)* best = nullptr;
  bool best_is_default = false;
  if (t.gnu_hash != nullptr) {
    const uint32_t nbuckets = t.gnu_hash[0];
    const uint32_t symoffset = t.gnu_hash[1];
    const uint32_t bloom_words = t.gnu_hash[2];
    if (nbuckets == 0) return nullptr;
    const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(t.gnu_hash + 4);
    const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_words);
    const uint32_t* chain = buckets + nbuckets;
    const uint32_t hash = gnuHash(name);
    uint32_t index = buckets[hash % nbuckets];
    if (index < symoffset) return nullptr;
    for (;; ++index) {
      const uint32_t entry = chain[index - symoffset];
      if ((entry | 1) == (hash | 1)) consider(t, index, name, &best, &best_is_default);
      if ((entry & 1) != 0) break;  // end of this bucket's chain
    }
  } else if (t.sysv_hash != nullptr) {
    const uint32_t nbuckets = t.sysv_hash[0];
    if (nbuckets == 0) return nullptr;
    const uint32_t* buckets = t.sysv_hash + 2;
    const uint32_t* chain = buckets + nbuckets;
    for (uint32_t index = buckets[sysvHash(name) % nbuckets]; index != STN_UNDEF;
         index = chain[index])
      consider(t, index, name, &best, &best_is_default);
  }
  return best;
}

// `name` in the first loaded object whose file name starts with `prefix`. The link map's list is
// walked without the loader's lock: the C library is near its head, loaded at startup and never
// unloaded, so a concurrent dlopen (which appends) cannot be in the way.
void* findIn(const char* prefix, const char* name) {
  for (const link_map* map = _r_debug.r_map; map != nullptr; map = map->l_next) {
    if (map->l_name == nullptr || !startsWith(baseName(map->l_name), prefix)) continue;
    if (const ElfW(Sym)* s = findSymbol(tablesOf(map), name))
      return reinterpret_cast<void*>(map->l_addr + s->st_value);
  }
  return nullptr;
}

// glibc 2.34 moved the dl* functions from libdl.so.2 into libc.so.6.
void* findLibcFunction(const char* name) {
  if (void* f = findIn("libc.so.", name)) return f;
  return findIn("libdl.so.", name);
}

DlsymFn g_dlsym = nullptr;  // __atomic builtins only
DlvsymFn g_dlvsym = nullptr;

}  // namespace

DlsymFn libcDlsym() {
  DlsymFn f = __atomic_load_n(&g_dlsym, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = reinterpret_cast<DlsymFn>(findLibcFunction("dlsym"));
    if (f != nullptr) __atomic_store_n(&g_dlsym, f, __ATOMIC_RELEASE);
  }
  return f;
}

DlvsymFn libcDlvsym() {
  DlvsymFn f = __atomic_load_n(&g_dlvsym, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = reinterpret_cast<DlvsymFn>(findLibcFunction("dlvsym"));
    if (f != nullptr) __atomic_store_n(&g_dlvsym, f, __ATOMIC_RELEASE);
  }
  return f;
}

void* realDlsym(void* handle, const char* name) {
  const DlsymFn f = libcDlsym();
  return f != nullptr ? f(handle, name) : nullptr;
}

void* realDlvsym(void* handle, const char* name, const char* version) {
  const DlvsymFn f = libcDlvsym();
  return f != nullptr ? f(handle, name, version) : nullptr;
}

}  // namespace ncclrec::recorder
