//! The `sbtestN` tables as sysbench 1.0.20 creates them: `id`, `k`, `c`
//! and `pad`, the key on id in each database's words, and the indexes built
//! after the bulk load.

use super::config::Config;

impl Config {
    /// sysbench's `CREATE TABLE sbtest{n}` in the target's dialect: the
    /// primary key on id (with `--secondary` a plain key, declared here
    /// where the dialect can, else an index built after the load).
    pub(super) fn create_table_sql(&self, n: u64) -> String {
        let dialect = self.dialect();
        let key = if self.secondary {
            // Where CREATE TABLE cannot say it, a plain index after the load.
            dialect.secondary_key()
        } else {
            Some("PRIMARY KEY (id)")
        };
        let key = key.map(|k| format!(",\n  {k}")).unwrap_or_default();
        let id = dialect.id_column(self.auto_inc, self.secondary);
        let suffix = dialect.table_options(&self.storage_engine);
        format!(
            "CREATE TABLE sbtest{n}(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL{key}\n) {suffix}"
        )
    }

    /// With `--secondary`, the plain index on id that stands in for the
    /// primary key where CREATE TABLE did not declare it; built after the load.
    pub(super) fn id_index_sql(&self, n: u64) -> Option<String> {
        (self.secondary && self.dialect().secondary_key().is_none())
            .then(|| format!("CREATE INDEX xid_{n} ON sbtest{n}(id)"))
    }

    /// With `--create-secondary`, the index on k, built after the load as
    /// sysbench does.
    pub(super) fn k_index_sql(&self, n: u64) -> Option<String> {
        self.create_secondary
            .then(|| format!("CREATE INDEX k_{n} ON sbtest{n}(k)"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::values;
    use super::super::Test;
    use super::*;

    #[test]
    fn the_schema_is_sysbench_s() {
        let dir = tempfile::tempdir().unwrap();
        let d = format!("--oltp-dir={}", dir.path().display());
        let cfg = Config::from_values(Test::ReadWrite, &values(&[&d])).unwrap();
        let sql = cfg.create_table_sql(3);
        assert!(sql.starts_with("CREATE TABLE sbtest3("), "{sql}");
        assert!(sql.contains("c CHAR(120) DEFAULT '' NOT NULL"), "{sql}");
        assert!(sql.contains("pad CHAR(60) DEFAULT '' NOT NULL"), "{sql}");
        let my = Config::from_values(Test::ReadWrite, &values(&["--db-driver=mysql"])).unwrap();
        let sql = my.create_table_sql(1);
        assert!(
            sql.contains("AUTO_INCREMENT") && sql.contains("ENGINE = innodb"),
            "{sql}"
        );
        let pg = Config::from_values(Test::ReadWrite, &values(&["--db-driver=pgsql"])).unwrap();
        assert!(pg.create_table_sql(1).contains("id SERIAL"));
    }

    /// Every driver with and without `--auto-inc` and `--secondary`: the id
    /// column, the key clause, what follows the columns, and whether id gets
    /// an index after the load.
    #[test]
    fn each_driver_declares_id_and_its_key_in_its_own_words() {
        let pk = ",\n  PRIMARY KEY (id)";
        let xid = ",\n  KEY xid (id)";
        let engine = "/*! ENGINE = myisam */";
        let auto = "INTEGER NOT NULL AUTO_INCREMENT";
        let plain = "INTEGER NOT NULL";
        let cases = [
            ("sqlite", "on", "off", "INTEGER", pk, "", false),
            ("sqlite", "off", "off", "INTEGER", pk, "", false),
            ("sqlite", "on", "on", plain, "", "", true),
            ("sqlite", "off", "on", plain, "", "", true),
            ("pgsql", "on", "off", "SERIAL", pk, "", false),
            ("pgsql", "off", "off", plain, pk, "", false),
            ("pgsql", "on", "on", plain, "", "", true),
            ("pgsql", "off", "on", plain, "", "", true),
            ("mysql", "on", "off", auto, pk, engine, false),
            ("mysql", "off", "off", plain, pk, engine, false),
            ("mysql", "on", "on", auto, xid, engine, false),
            ("mysql", "off", "on", plain, xid, engine, false),
        ];
        for (driver, auto_inc, secondary, id, key, suffix, id_index) in cases {
            let v = values(&[
                &format!("--db-driver={driver}"),
                &format!("--auto-inc={auto_inc}"),
                &format!("--secondary={secondary}"),
                "--mysql-storage-engine=myisam",
            ]);
            let cfg = Config::from_values(Test::ReadWrite, &v).unwrap();
            let case = format!("{driver} --auto-inc={auto_inc} --secondary={secondary}");
            assert_eq!(
                cfg.create_table_sql(2),
                format!(
                    "CREATE TABLE sbtest2(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL{key}\n) {suffix}"
                ),
                "{case}"
            );
            assert_eq!(
                cfg.id_index_sql(2),
                id_index.then(|| "CREATE INDEX xid_2 ON sbtest2(id)".to_string()),
                "{case}"
            );
            assert_eq!(
                cfg.k_index_sql(2).as_deref(),
                Some("CREATE INDEX k_2 ON sbtest2(k)"),
                "{case}"
            );
        }
    }
}
