// Word lists and the small TSV side files users pass with a run or a corpus; the selector byte
// picks the reader: gender word list (`word,f|m`), qid list, query gender labels, bias file
// (`docid<TAB>bias<TAB>female<TAB>male`), bias labels, category vectors, query attributes,
// MATS JSON, shown ranks, debias qrels, TSV map, rotation offsets, generated pairs.
#include "debias/balance.hpp"
#include "debias/judgements.hpp"
#include "debias/rotation.hpp"
#include "eval/bias_metrics.hpp"
#include "eval/distribution.hpp"
#include "eval/gender.hpp"
#include "eval/position_table.hpp"
#include "eval/subsets.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    auto rest = fuzz::as_text(data, size);
    const auto sel = fuzz::take_selector(rest);
    const auto path = fuzz::write_input(rest, (sel % 13) == 7 ? "mats.json" : "list.txt");
    fuzz::expect_clean([&] {
        switch (sel % 13) {
            case 0: {
                auto words = eval::GenderWordList::load(path);
                (void)words.lookup("she");
                (void)eval::count_gender_words("She and he, HIS hers.", words);
                break;
            }
            case 1:
                (void)eval::read_qid_list(path);
                break;
            case 2:
                (void)debias::read_gendered_queries(path);
                break;
            case 3:
                (void)eval::read_bias_file(path);
                break;
            case 4:
                (void)eval::read_bias_file(path, eval::BiasVariant::Tf);
                break;
            case 5:
                (void)eval::read_bias_labels(path);
                break;
            case 6:
                (void)eval::read_category_vectors(path);
                break;
            case 7:
                (void)eval::read_mats_json(path);
                break;
            case 8:
                (void)eval::read_query_attributes(path);
                break;
            case 9: {
                auto shown = eval::read_shown_ranks(path);
                for (unsigned k = 1; k <= 3; ++k) (void)eval::subset_qids(shown, k);
                break;
            }
            case 10:
                (void)debias::read_qrels(path);
                break;
            case 11:
                (void)debias::read_rotation_offsets(path);
                break;
            default:
                (void)debias::read_tsv_map(path);
                (void)debias::read_generated_pairs(path);
                break;
        }
    });
    return 0;
}
