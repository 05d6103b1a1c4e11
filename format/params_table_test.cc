#include "format/params_table.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace ncclrec::format {
namespace {

TEST(ParamsTable, ParamValueIsTheEnvironmentsElseTheTablesDefault) {
  unsetenv("NCCLREC_TIMEOUT");
  EXPECT_EQ(paramValue("NCCLREC_TIMEOUT"), "60");
  setenv("NCCLREC_TIMEOUT", "", 1);
  EXPECT_EQ(paramValue("NCCLREC_TIMEOUT"), "60");
  setenv("NCCLREC_TIMEOUT", "2.5", 1);
  EXPECT_EQ(paramValue("NCCLREC_TIMEOUT"), "2.5");
  unsetenv("NCCLREC_TIMEOUT");
  ASSERT_NE(findParam("NCCLREC_DIR"), nullptr);
  EXPECT_EQ(findParam("NCCLREC_DIR")->default_value, "./ncclrec-dumps");
  EXPECT_EQ(findParam("NCCLREC_NO_SUCH_KNOB"), nullptr);
  EXPECT_EQ(paramValue("NCCLREC_NO_SUCH_KNOB"), "");
}

}  // namespace
}  // namespace ncclrec::format
