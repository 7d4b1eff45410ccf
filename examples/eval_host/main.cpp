// Evaluates an in-memory ranking with trec_eval's measures and ir_measures names, through the
// installed plumb::eval component alone.
#include <cstdio>
#include <memory>

#include "plumb/eval/evaluator.hpp"

int main() {
    auto qrels = std::make_shared<const plumb::eval::Qrels>(
        plumb::eval::Qrels::parse("q1 0 a 2\nq1 0 b 0\nq1 0 c 1\n"));
    plumb::eval::Evaluator ev(qrels, plumb::eval::MeasureSet::parse({"map", "nDCG@10", "RR"}));
    plumb::RankedList list;
    list.qid = "q1";
    for (auto [id, score] : {std::pair{"b", 3.0f}, {"c", 2.0f}, {"a", 1.0f}}) {
        plumb::Candidate c;
        c.docid = id;
        c.score = score;
        list.candidates.push_back(c);
    }
    const auto r = ev.evaluate({list});
    for (std::size_t i = 0; i < r.columns.size(); ++i) {
        std::printf("%s %.4f\n", r.columns[i].name.c_str(), r.summary[i]);
    }
    return 0;
}
