#include <gtest/gtest.h>

#include <cmath>

#include "debias/plot.hpp"
#include "debias_test_util.hpp"
#include "plugin/error.hpp"

namespace db = plumb::debias;
using namespace debias_test;

TEST(Plot, NiceTicksUseOneTwoFiveSteps) {
    auto t = db::nice_ticks(0.0, 1.0);  // raw step 1/6 -> 0.2
    ASSERT_EQ(t.size(), 6u);
    EXPECT_DOUBLE_EQ(t.front(), 0.0);
    EXPECT_NEAR(t.back(), 1.0, 1e-12);
    EXPECT_NEAR(t[1] - t[0], 0.2, 1e-12);
    auto u = db::nice_ticks(0.0, 37.0);  // raw 6.17 -> 5
    EXPECT_DOUBLE_EQ(u.front(), 0.0);
    EXPECT_DOUBLE_EQ(u.back(), 40.0);
    EXPECT_DOUBLE_EQ(u[1] - u[0], 5.0);
    auto w = db::nice_ticks(3.0, 3.0);  // degenerate range is widened
    EXPECT_GE(w.size(), 2u);
    EXPECT_LE(w.front(), 3.0);
    EXPECT_GE(w.back(), 3.0);
}

TEST(Plot, BarChartWritesValidPngAndSvg) {
    auto dir = temp_dir();
    db::BarChart c;
    c.title = "t";
    c.x_label = "x";
    c.y_label = "y";
    c.categories = {"a", "b", "c"};
    c.series = {{"one", {1, 2, 3}, {}}, {"two", {3, 0, 1}, {}}};
    db::write_bar_chart(c, dir / "bars");
    EXPECT_TRUE(is_png(dir / "bars.png"));
    EXPECT_TRUE(is_svg(dir / "bars.svg"));
    EXPECT_TRUE(no_temp_files(dir));
}

TEST(Plot, LineChartWithBandWritesValidPngAndSvg) {
    auto dir = temp_dir();
    db::LineChart c;
    c.title = "ATS";
    c.x = {0, 1, 2, 3};
    c.series = {{"ats", {0.9, 0.8, NAN, 0.6}, {0.1, 0.05, 0.0, 0.1}}};
    db::write_line_chart(c, dir / "line");
    EXPECT_TRUE(is_png(dir / "line.png"));
    EXPECT_TRUE(is_svg(dir / "line.svg"));
}

TEST(Plot, MismatchedSeriesIsInvalidArgumentAndWritesNothing) {
    auto dir = temp_dir();
    db::BarChart c;
    c.categories = {"a", "b"};
    c.series = {{"s", {1}, {}}};
    EXPECT_THROW(db::write_bar_chart(c, dir / "bad"), plumb::InvalidArgument);
    db::BarChart empty;
    EXPECT_THROW(db::write_bar_chart(empty, dir / "bad"), plumb::InvalidArgument);
    EXPECT_FALSE(std::filesystem::exists(dir / "bad.png"));
    EXPECT_TRUE(no_temp_files(dir));
}

TEST(Plot, UnwritableDirectoryIsIoError) {
    db::BarChart c;
    c.categories = {"a"};
    c.series = {{"s", {1}, {}}};
    EXPECT_THROW(db::write_bar_chart(c, "/nonexistent/plumb/dir/p"), plumb::IoError);
}
