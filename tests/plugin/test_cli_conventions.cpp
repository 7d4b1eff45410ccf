// The `plumb` command line's conventions: exit statuses (0 success, 1 error in the input,
// 2 usage error), `plumb: error:` on every error, and a suggestion for a mistyped command.
#include <gtest/gtest.h>

#include <string>

#include "plugin/cli/progress_bar.hpp"
#include "tests/support/cli.hpp"

namespace {

plumb::test::CliResult cli(const std::string& args) { return plumb::test::run_plumb(args); }

}  // namespace

TEST(CliConventions, UsageErrorsExitTwoWithPrefixAndSuggestion) {
    auto typo = cli("serch --index x");
    EXPECT_EQ(typo.status, 2);
    EXPECT_EQ(typo.out.rfind("plumb: error: unknown command 'serch'", 0), 0u) << typo.out;
    EXPECT_NE(typo.out.find("did you mean 'plumb search'?"), std::string::npos) << typo.out;

    auto nested = cli("debias rotat");
    EXPECT_EQ(nested.status, 2);
    EXPECT_NE(nested.out.find("did you mean 'plumb debias rotate'?"), std::string::npos)
        << nested.out;

    auto option = cli("search --index x --topics y --output z --no-such-option");
    EXPECT_EQ(option.status, 2);
    EXPECT_EQ(option.out.rfind("plumb: error:", 0), 0u) << option.out;
    EXPECT_NE(option.out.find("plumb search --help"), std::string::npos) << option.out;

    auto none = cli("");
    EXPECT_EQ(none.status, 2);
    EXPECT_EQ(none.out.rfind("plumb: error:", 0), 0u) << none.out;

    // Nothing resembles the word: no suggestion.
    auto far = cli("qwertyuiop");
    EXPECT_EQ(far.status, 2);
    EXPECT_EQ(far.out.find("did you mean"), std::string::npos) << far.out;
}

TEST(CliConventions, InputErrorsExitOneAndHelpExitsZero) {
    auto missing = cli("eval /nonexistent/qrels /nonexistent/run");
    EXPECT_EQ(missing.status, 1);
    EXPECT_EQ(missing.out.rfind("plumb: error:", 0), 0u) << missing.out;
    EXPECT_NE(missing.out.find("/nonexistent/qrels"), std::string::npos) << missing.out;

    auto help = cli("search --help");
    EXPECT_EQ(help.status, 0);
    EXPECT_NE(help.out.find("--topics"), std::string::npos);
}

TEST(CliConventions, ImpossibleCountsAreUsageErrors) {
    // A count that must be at least 1 is refused while parsing (exit 2), naming the option and
    // the value, whatever the command.
    for (const std::string args : {"search --index x --topics y --output z --k 0",
                                   "compare --qrels q --run a --run b --decimals -1",
                                   "eval-groups --qrels q --run a --quantiles 0",
                                   "eval-liwc --run r --categories c --queries q --k -3",
                                   "bias-table --run A,r --bias-file b --cutoff x"}) {
        auto r = cli(args);
        EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
        EXPECT_EQ(r.out.rfind("plumb: error: --", 0), 0u) << args << "\n" << r.out;
    }
    auto k0 = cli("search --index x --topics y --output z --k 0");
    EXPECT_NE(k0.out.find("--k: 0 is not a positive whole number"), std::string::npos) << k0.out;
}

// The progress line's rate keeps about three significant digits, so slow work (a BERT training
// step every few seconds) reads "0.25 steps/s", not "0 steps/s". Values by hand.
TEST(CliConventions, ProgressRateKeepsSignificantDigits) {
    using plumb::cli::ProgressBar;
    EXPECT_EQ(ProgressBar::format_rate(1639.4), "1639");
    EXPECT_EQ(ProgressBar::format_rate(52.14), "52.1");
    EXPECT_EQ(ProgressBar::format_rate(3.449), "3.45");
    EXPECT_EQ(ProgressBar::format_rate(0.25), "0.25");
    EXPECT_EQ(ProgressBar::format_rate(0.004123), "0.0041");
    EXPECT_EQ(ProgressBar::format_rate(0.0), "0");
}
