"""Engines beyond DuckDB on one machine: a store exported to Parquet (export), the views of
queries/ translated to Spark SQL (transpile), run on a SparkSession (session, spark) and
logs parsed by Spark itself (spark_ingest).

pyspark is an optional extra (`pip install 'logan[spark]'`): nothing here imports it until
a Spark session is asked for.
"""
