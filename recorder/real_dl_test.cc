#include "recorder/real_dl.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace ncclrec::recorder {
namespace {

// No shim here: the names bind to libc, and the copies found in its symbol table must agree.
TEST(RealDlTest, FindsTheCLibrarysFunctions) {
  ASSERT_NE(libcDlsym(), nullptr);
  ASSERT_NE(libcDlvsym(), nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(libcDlsym()), dlsym(RTLD_DEFAULT, "dlsym"));
  EXPECT_EQ(reinterpret_cast<void*>(libcDlvsym()), dlsym(RTLD_DEFAULT, "dlvsym"));
  EXPECT_EQ(libcDlsym(), libcDlsym());
}

TEST(RealDlTest, AnswersAsDlsymDoesForThisObject) {
  for (const char* name : {"malloc", "open", "pthread_create", "dlopen"}) {
    EXPECT_EQ(realDlsym(RTLD_DEFAULT, name), dlsym(RTLD_DEFAULT, name)) << name;
    EXPECT_EQ(realDlsym(RTLD_NEXT, name), dlsym(RTLD_NEXT, name)) << name;
  }
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  EXPECT_EQ(realDlsym(libc, "getpid"), dlsym(libc, "getpid"));
  dlclose(libc);
}

TEST(RealDlTest, MissingSymbolIsNullWithAnError) {
  dlerror();
  EXPECT_EQ(realDlsym(RTLD_DEFAULT, "ncclrecNoSuchSymbol"), nullptr);
  EXPECT_NE(dlerror(), nullptr);
  EXPECT_EQ(realDlvsym(RTLD_DEFAULT, "malloc", "NCCLREC_NO_SUCH_VERSION"), nullptr);
  EXPECT_NE(dlerror(), nullptr);
}

}  // namespace
}  // namespace ncclrec::recorder
